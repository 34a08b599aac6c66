// The activity picker: a lab's schedule (opens, due, closes, late runs) means nothing for a
// quiz, so its fields show only while a lab is chosen. Without JavaScript they all show,
// and the quiz ignores them.
(function () {
  "use strict";
  var activity = document.querySelector("select[name=activity]");
  if (!activity) { return; }
  var labOnly = ["opens_at", "due_at", "closes_at", "late_policy", "late_penalty_percent"]
    .map(function (name) { return document.querySelector("[name=" + name + "]"); })
    .filter(Boolean)
    .map(function (field) { return field.closest("form > div") || field; });
  function show() {
    var isLab = activity.value.indexOf("lab:") === 0;
    labOnly.forEach(function (wrapper) { wrapper.hidden = !isLab; });
  }
  activity.addEventListener("change", show);
  show();
})();
