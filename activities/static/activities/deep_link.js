// The activity picker: the fields one kind of activity adds (a lab's schedule: opens, due,
// closes, late runs) mean nothing for another, so each shows only while an activity of its
// kind is chosen (the form marks them data-kind). Without JavaScript they all show, and
// the other kinds ignore them.
(function () {
  "use strict";
  var activity = document.querySelector("select[name=activity]");
  if (!activity) { return; }
  var kindFields = Array.prototype.slice.call(document.querySelectorAll("[data-kind]"))
    .map(function (field) {
      return { kind: field.getAttribute("data-kind"), wrapper: field.closest("form > div") || field };
    });
  function show() {
    var kind = activity.value.split(":")[0];
    kindFields.forEach(function (field) { field.wrapper.hidden = field.kind !== kind; });
  }
  activity.addEventListener("change", show);
  show();
})();
