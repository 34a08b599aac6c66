// Draws each <canvas data-chart="name"> from the JSON configuration the page carries in
// <script type="application/json" id="chart-name">. The table beside each chart holds the
// same figures for screen readers and for copying. A point that carries a "label" (a
// question's number) is named by it in the tooltip.
(function () {
  "use strict";
  function pointLabel(context) {
    var raw = context.raw;
    if (raw && typeof raw === "object" && raw.label) {
      return raw.label + ": " + context.parsed.x + " / " + context.parsed.y;
    }
    return undefined; // Chart.js's own label
  }
  function draw() {
    if (typeof Chart === "undefined") return;
    document.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
      var source = document.getElementById("chart-" + canvas.dataset.chart);
      if (!source) return;
      var config = JSON.parse(source.textContent);
      if (config.type === "scatter") {
        config.options = config.options || {};
        config.options.plugins = config.options.plugins || {};
        config.options.plugins.tooltip = { callbacks: { label: pointLabel } };
      }
      var chart = new Chart(canvas, config);
      canvas.dataset.drawn = String(chart.data.datasets.length);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
