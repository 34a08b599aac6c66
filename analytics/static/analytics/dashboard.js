// Draws each <canvas data-chart="name"> from the JSON configuration the page carries in
// <script type="application/json" id="chart-name">. The table beside each chart holds the
// same figures for screen readers and for copying.
(function () {
  "use strict";
  function draw() {
    if (typeof Chart === "undefined") return;
    document.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
      var source = document.getElementById("chart-" + canvas.dataset.chart);
      if (!source) return;
      var chart = new Chart(canvas, JSON.parse(source.textContent));
      canvas.dataset.drawn = String(chart.data.datasets.length);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
