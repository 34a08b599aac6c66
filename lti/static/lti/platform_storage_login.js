// LTI platform storage (1EdTech client-side postMessage): keep this login's secret in
// the platform's storage, then continue to the platform's authorization endpoint.
(function () {
  "use strict";
  var storage = JSON.parse(document.getElementById("lti-storage").textContent);
  var authUrl = JSON.parse(document.getElementById("lti-auth-url").textContent);
  ltiPlatformStorage.put(storage, function () { window.location.assign(authUrl); });
})();
