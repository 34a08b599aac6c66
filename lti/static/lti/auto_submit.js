// Submit the page's form marked data-auto-submit at once (the deep-linking return to the
// LMS); without JavaScript its button does the same.
(function () {
  "use strict";
  var form = document.querySelector("form[data-auto-submit]");
  if (form) { form.submit(); }
})();
