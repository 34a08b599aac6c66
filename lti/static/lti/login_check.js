// The login inside the LMS page: continue to the platform when the browser kept the tool's
// cookie here; otherwise show the offer to sign in from a new window, where it is
// first-party (lti/templates/lti/login_check.html).
(function () {
  "use strict";
  var authUrl = JSON.parse(document.getElementById("lti-auth-url").textContent);
  var kept = document.cookie.split(";").some(function (cookie) {
    return cookie.trim() === "lti_cookie_check=1";
  });
  if (kept) {
    window.location.replace(authUrl);
    return;
  }
  document.getElementById("login-pending").hidden = true;
  var blocked = document.getElementById("login-blocked");
  blocked.hidden = false;
  blocked.querySelector("form").addEventListener("submit", function () {
    document.getElementById("login-opened").hidden = false;
  });
})();
