// Draws every figure the server embedded with json_script: <script type="application/json"
// class="plotly-figure" data-target="element id">. Figures are built in Python; this only draws them.
(function () {
  "use strict";
  var phone = window.matchMedia("(max-width: 600px)").matches;
  // On a phone the dates under the axis wrap to two lines ("Oct 4" over "2026"), which pushed the
  // axis title onto the legend's first row: the legend moves down by that much, the plot keeps its size.
  var AXIS_TITLE_ROOM = 28;
  function roomForTheAxisTitle(layout) {
    if (!layout || !layout.legend || !layout.xaxis || !layout.xaxis.title || !layout.height || !layout.margin) { return; }
    var plotHeight = layout.height - layout.margin.t - layout.margin.b;
    if (plotHeight <= 0) { return; }
    layout.legend.y = (layout.legend.y === undefined ? -0.2 : layout.legend.y) - AXIS_TITLE_ROOM / plotHeight;
    layout.margin.b += AXIS_TITLE_ROOM;
    layout.height += AXIS_TITLE_ROOM;
  }
  // On a phone a marker on every run strung a 90-day line into beads that hid the line: past this many
  // runs a line's markers are thinner there (the incomplete and silent runs' own markers keep their size).
  var PHONE_MANY_RUNS = 45;
  function thinnerRunMarkers(data) {
    (data || []).forEach(function (trace) {
      if (trace.mode === "lines+markers" && trace.marker && trace.x && trace.x.length > PHONE_MANY_RUNS) {
        trace.marker.size = 2.5;
      }
    });
  }
  // On a phone the legend wraps to a row or two per entry and Plotly takes its room from the plot: five
  // entries left a 139 px plot under a 116 px legend, ten a 146 px plot under 145 px. The figure grows
  // instead, so the plot keeps what a chart of four entries gets; the legend keeps its distance below it.
  var PHONE_MIN_PLOT = 180;
  function roomForThePlot(target) {
    var full = target._fullLayout, layout = target.layout;
    if (!full || !full._size || !layout || !layout.height || full._size.h >= PHONE_MIN_PLOT) { return; }
    var plot = full._size.h, grow = Math.ceil(PHONE_MIN_PLOT - plot);
    var update = { height: layout.height + grow };
    // The legend's y counts in plot heights: scaled so that it stays as many pixels below the axis.
    if (layout.legend && typeof layout.legend.y === "number") { update["legend.y"] = layout.legend.y * plot / (plot + grow); }
    target.style.height = update.height + "px";
    return Plotly.relayout(target, update);
  }
  // The legend from a keyboard: Plotly's entries answer the mouse only, and the coverage chart leaves
  // fields in its legend "a click away". Each entry becomes a button (Enter or Space) that shows or hides
  // its line with its legend group, as a click does; Plotly redraws the legend, so this runs after each draw.
  function keyboardLegend(target) {
    target.querySelectorAll(".legend .traces").forEach(function (entry) {
      var item = entry.__data__ && entry.__data__[0] && entry.__data__[0].trace;
      if (!item || item.index === undefined) { return; }
      entry.setAttribute("tabindex", "0");
      entry.setAttribute("role", "button");
      entry.setAttribute("aria-label", entry.textContent.trim() || item.name);
      entry.setAttribute("aria-pressed", String(item.visible === true));
      if (entry.dataset.keyboard) { return; }
      entry.dataset.keyboard = "on";
      entry.addEventListener("keydown", function (event) {
        if (event.key !== "Enter" && event.key !== " ") { return; }
        event.preventDefault();
        var trace = entry.__data__[0].trace, name = entry.getAttribute("aria-label");
        var indices = target.data.map(function (t, i) { return i; }).filter(function (i) {
          return trace.legendgroup ? target.data[i].legendgroup === trace.legendgroup : i === trace.index;
        });
        Plotly.restyle(target, { visible: trace.visible === true ? "legendonly" : true }, indices).then(function () {
          keyboardLegend(target);
          var again = Array.prototype.filter.call(target.querySelectorAll(".legend .traces"), function (e) {
            return e.getAttribute("aria-label") === name;
          })[0];
          if (again) { again.focus(); }
        });
      });
    });
  }
  // Plotly's toolbar from a keyboard: each of its seven buttons was a tab stop, so a keyboard crossed
  // seven per chart to reach the page below it. One stop per toolbar now (the WAI-ARIA toolbar: arrows
  // move between its buttons, Home and End to its ends; Plotly shows it while it holds the focus).
  // Plotly redraws it, so this runs after each draw.
  var TOOLBAR_KEYS = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
  function keyboardToolbar(target) {
    var bar = target.querySelector(".modebar");
    if (!bar) { return; }
    var buttons = Array.prototype.slice.call(bar.querySelectorAll(".modebar-btn"));
    if (!buttons.length) { return; }
    bar.setAttribute("role", "toolbar");
    bar.setAttribute("aria-label", "chart tools (arrow keys move between them)");
    var current = buttons.filter(function (b) { return b.getAttribute("tabindex") === "0"; })[0] || buttons[0];
    buttons.forEach(function (b) { b.setAttribute("tabindex", b === current ? "0" : "-1"); });
    if (bar.dataset.keyboard) { return; }
    bar.dataset.keyboard = "on";
    bar.addEventListener("keydown", function (event) {
      var all = Array.prototype.slice.call(bar.querySelectorAll(".modebar-btn"));
      var at = all.indexOf(document.activeElement);
      if (at < 0) { return; }
      var to = event.key === "Home" ? 0 : event.key === "End" ? all.length - 1 : TOOLBAR_KEYS[event.key] === undefined ? null : (at + TOOLBAR_KEYS[event.key] + all.length) % all.length;
      if (to === null) { return; }
      event.preventDefault();
      all[at].setAttribute("tabindex", "-1");
      all[to].setAttribute("tabindex", "0");
      all[to].focus();
    });
  }
  function draw() {
    document.querySelectorAll("script.plotly-figure").forEach(function (node) {
      var target = document.getElementById(node.dataset.target);
      if (!target || typeof Plotly === "undefined") { return; }
      var figure = JSON.parse(node.textContent);
      if (phone) { roomForTheAxisTitle(figure.layout); thinnerRunMarkers(figure.data); }
      // Responsive plots take their size from the element on a window resize: without a height of its
      // own it collapses to its min-height, and the drawn plot spills over the chart below it.
      if (figure.layout && figure.layout.height) { target.style.height = figure.layout.height + "px"; }
      var drawn = Plotly.newPlot(target, figure.data, figure.layout, {
        // On a phone the toolbar sat over the titles, and pinch-zoom does its work.
        displayModeBar: phone ? false : "hover",
        responsive: true, displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"],
        // plotly.js 3 offers "Share chart..." by default, which sends the figure (a source's runs) to
        // Plotly's cloud: the pages work offline and keep their data on this server.
        showSendToCloud: false, showEditInChartStudio: false, plotlyServerURL: ""
      });
      if (phone && drawn && drawn.then) { drawn.then(function () { return roomForThePlot(target); }); }
      if (drawn && drawn.then) { drawn.then(function () { keyboardLegend(target); keyboardToolbar(target); }); }
      target.on("plotly_afterplot", function () { keyboardLegend(target); keyboardToolbar(target); });
      // A click on a run's marker opens that run: data-run-url is the URL of run 0, customdata the run's id.
      if (target.dataset.runUrl) {
        target.on("plotly_click", function (event) {
          // With "x unified" hover the click reports every trace at that time: the run is the one
          // whose trace carries run ids (lines of declared total and baseline carry none).
          var point = (event.points || []).filter(function (p) { return p.customdata; })[0];
          if (point) {
            window.location.assign(target.dataset.runUrl.replace("/0/", "/" + encodeURIComponent(point.customdata) + "/"));
          }
        });
      }
    });
  }
  // plotly.js (the cartesian bundle, ~400 KB on the wire) is fetched only after the page's text is
  // parsed and shown: on a slow phone the headline must not wait for the charts.
  var script = document.currentScript;
  function load() {
    if (typeof Plotly !== "undefined" || !script || !script.dataset.plotly) { draw(); return; }
    var plotly = document.createElement("script");
    plotly.src = script.dataset.plotly;
    plotly.onload = function () { window.requestAnimationFrame(draw); };
    document.head.appendChild(plotly);
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", load); } else { load(); }
})();
