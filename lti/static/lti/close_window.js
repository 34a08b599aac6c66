// The deep-linking choice went back to the LMS page that opened this window: close it where
// the browser allows (it says so on the page otherwise).
(function () {
  "use strict";
  window.setTimeout(function () { window.close(); }, 3000);
})();
