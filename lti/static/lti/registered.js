// LTI Dynamic Registration: tell the platform's dialog that the registration is done.
(function () {
  "use strict";
  (window.opener || window.parent).postMessage({ subject: "org.imsglobal.lti.close" }, "*");
})();
