// The lab workbench, enhanced: only the chosen policy kind's inputs show, the policy being
// built appears as JSON in the editor, and the cost model's estimate follows every change.
// Without JavaScript every input shows and the "Estimate" button asks the server instead.
(function () {
  "use strict";
  var DELAY_MS = 250;

  function init() {
    var form = document.getElementById("workbench");
    if (!form || !window.fetch) return;
    var editor = form.querySelector("textarea[name=policy_json]");
    var estimate = document.getElementById("estimate");
    var button = document.getElementById("estimate-button");
    var jsonKind = form.querySelector("input[name=kind][value=json]");
    var timer = null;
    var latest = 0;

    function chosenKind() {
      var checked = form.querySelector("input[name=kind]:checked");
      return checked ? checked.value : "";
    }

    function showInputs() {
      var kind = chosenKind();
      form.querySelectorAll("[data-kinds]").forEach(function (group) {
        group.hidden = group.dataset.kinds.split(" ").indexOf(kind) < 0;
      });
    }

    function showErrors(messages) {
      var box = document.createElement("div");
      box.className = "errorlist";
      box.id = "estimate-errors";
      messages.forEach(function (message) {
        var line = document.createElement("p");
        line.textContent = message;
        box.appendChild(line);
      });
      estimate.replaceChildren(box);
    }

    function refresh() {
      var request = ++latest;
      var kind = chosenKind();
      fetch(form.dataset.estimateUrl, {
        method: "POST",
        body: new FormData(form),
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      })
        .then(function (response) {
          return response.json().then(function (data) {
            if (request !== latest) return; // an older answer after a newer change
            if (!response.ok) {
              showErrors(data.errors || []);
              return;
            }
            estimate.innerHTML = data.html; // rendered and escaped by the server
            if (kind !== "json") editor.value = data.policy;
          });
        })
        .catch(function () {
          /* the estimate is a help; the form still submits */
        });
    }

    function later() {
      window.clearTimeout(timer);
      timer = window.setTimeout(refresh, DELAY_MS);
    }

    form.addEventListener("change", function (event) {
      if (event.target === editor) return;
      showInputs();
      later();
    });
    editor.addEventListener("input", function () {
      if (jsonKind && !jsonKind.checked) {
        jsonKind.checked = true;
        showInputs();
      }
      later();
    });
    form.querySelectorAll("input[type=number]").forEach(function (input) {
      input.addEventListener("input", later);
    });
    if (button) button.hidden = true; // the estimate follows each change
    showInputs();
    refresh();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
