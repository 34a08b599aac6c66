// The login inside the LMS page: continue to the platform when the browser kept the tool's
// cookie here; otherwise show the offer to sign in from a new window, where it is
// first-party (lti/templates/lti/login_check.html). When the new window's launch is deep
// linking, the teacher's choice comes back to this page (lti/deep_link_relay.py): it asks
// with the secret only it holds until the answer is ready, then takes it and posts it to the
// LMS from here, so the LMS's return page runs in its own dialog.
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
  var channelScript = document.getElementById("lti-return-channel");
  var held = channelScript ? JSON.parse(channelScript.textContent) : null;
  var asking = false;

  function fields() {
    var body = new URLSearchParams();
    body.set("channel", held.channel);
    body.set("secret", held.secret);
    return body;
  }

  function takeAnswer() {
    var form = document.getElementById("return-channel-answer");
    fields().forEach(function (value, name) {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      input.value = value;
      form.appendChild(input);
    });
    form.submit();
  }

  function ask() {
    fetch(held.status_url, {
      method: "POST", body: fields(), credentials: "omit", cache: "no-store"
    }).then(function (response) {
      return response.json();
    }).then(function (answer) {
      if (answer.status === "ready") {
        takeAnswer();
      } else if (answer.status === "waiting") {
        window.setTimeout(ask, 2000);
      }
      // "closed" (the window's launch was not deep linking) or "gone": nothing will come.
    }, function () {
      window.setTimeout(ask, 5000); // the network or the tool was away for a moment
    });
  }

  blocked.querySelector("form").addEventListener("submit", function () {
    document.getElementById("login-opened").hidden = false;
    if (held && !asking) {
      asking = true;
      document.getElementById("return-waiting").hidden = false;
      ask();
    }
  });
})();
