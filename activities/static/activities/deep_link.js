// The activity picker: the fields one kind of activity adds (a lab's schedule: opens, due,
// closes, late runs) mean nothing for another, so each shows only while an activity of its
// kind is chosen (the form marks them data-kind). Without JavaScript they all show, and
// the other kinds ignore them. The grading methods are marked the same way (data-kinds, the
// kinds that grade by each): a lab is graded by its best or last run only, and the server
// refuses the others with a message when no script hid them.
(function () {
  "use strict";
  var activity = document.querySelector("select[name=activity]");
  if (!activity) { return; }
  var kindFields = Array.prototype.slice.call(document.querySelectorAll("[data-kind]"))
    .map(function (field) {
      return { kind: field.getAttribute("data-kind"), wrapper: field.closest("form > div") || field };
    });
  var methods = Array.prototype.slice.call(document.querySelectorAll("option[data-kinds]"));
  function show() {
    var kind = activity.value.split(":")[0];
    kindFields.forEach(function (field) { field.wrapper.hidden = field.kind !== kind; });
    var offered = methods.filter(function (option) {
      return option.getAttribute("data-kinds").split(" ").indexOf(kind) !== -1;
    });
    methods.forEach(function (option) {
      option.hidden = option.disabled = offered.indexOf(option) === -1;
    });
    var chosen = methods.filter(function (option) { return option.selected; })[0];
    if (chosen && chosen.disabled && offered.length) { offered[0].selected = true; }
  }
  activity.addEventListener("change", show);
  show();
})();
