// The overview refreshes itself, so a wall screen stays current: every data-refresh-seconds it fetches its own URL,
// filters and page included, and swaps in the new counts, table and pager. The filter form is left
// alone (a half-typed search survives) and the scroll position is kept. A hidden tab does not poll;
// it refreshes as soon as it is shown again. Failures say so beside "Updated" and retry next time.
(function () {
  "use strict";
  var PARTS = ["live", "live-table"];
  var stamp = document.getElementById("updated");
  if (!stamp) { return; }
  var seconds = Number(stamp.dataset.refreshSeconds) || 60;
  var due = false;
  // Whoever reads the rows may stop the refresh (WCAG 2.2.2) and start it again: the button is in the
  // stamp, which each refresh replaces, so it is found again each time; shown only where this script runs.
  var paused = false;
  function showToggle() {
    var toggle = document.getElementById("refresh-toggle");
    if (toggle) { toggle.hidden = false; toggle.setAttribute("aria-pressed", String(paused)); }
    var note = document.getElementById("refresh-note");
    if (note) { note.textContent = paused ? "not refreshing (paused)" : "refreshes every minute"; }
  }
  document.addEventListener("click", function (event) {
    var toggle = event.target.closest && event.target.closest("#refresh-toggle");
    if (!toggle) { return; }
    paused = !paused;
    showToggle();
    if (!paused) { refresh(); }
  });

  // A keyboard's place survives the swap: the focused link or control inside a swapped part is found
  // again in the fresh one (the same tag and href or name, the same one of those), else focus fell to
  // <body> and a screen reader went back to the top of the page every minute.
  var FOCUSABLE = "a[href], button, input, select, textarea";
  function sameKind(element) {
    return element.tagName + (element.getAttribute("href") || element.name || "");
  }
  function focusedPlace() {
    var active = document.activeElement;
    var part = PARTS.map(function (id) { return document.getElementById(id); })
      .filter(function (node) { return node && active && node !== active && node.contains(active); })[0];
    if (!part) { return null; }
    var alike = Array.prototype.filter.call(part.querySelectorAll(FOCUSABLE), function (e) { return sameKind(e) === sameKind(active); });
    return { part: part.id, kind: sameKind(active), index: alike.indexOf(active) };
  }
  function refocus(place) {
    if (!place) { return; }
    var part = document.getElementById(place.part);
    if (!part) { return; }
    var alike = Array.prototype.filter.call(part.querySelectorAll(FOCUSABLE), function (e) { return sameKind(e) === place.kind; });
    var target = alike[place.index] || alike[0];
    if (target) { target.focus({ preventScroll: true }); }
  }

  // Said to a screen reader by a status region that no refresh replaces; emptied once a refresh works.
  function announce(text) {
    var status = document.getElementById("refresh-status");
    if (status && status.textContent !== text) { status.textContent = text; }
  }

  function refresh() {
    return fetch(window.location.href, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) {
        // A session that ended answers with the login page: leave the page as it is and say so.
        if (!response.ok || response.redirected) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var x = window.scrollX, y = window.scrollY;
        var focused = focusedPlace();
        PARTS.forEach(function (id) {
          var old = document.getElementById(id), replacement = fresh.getElementById(id);
          if (old && replacement) { old.replaceWith(document.importNode(replacement, true)); }
        });
        window.scrollTo(x, y);
        announce("");
        showToggle();
        refocus(focused);
        stamp = document.getElementById("updated");
      })
      .catch(function (error) {
        stamp = document.getElementById("updated");
        stamp.classList.add("stale");
        stamp.dataset.error = String(error && error.message || error);
        var note = stamp.querySelector(".failed") || stamp.appendChild(document.createElement("span"));
        note.className = "failed";
        note.textContent = " Refresh failed (" + stamp.dataset.error + "); trying again in a minute.";
        announce("Refresh failed: this page shows the sources as of " + stamp.querySelector("time").textContent + ".");
      });
  }

  function tick() {
    if (paused) { return; }
    if (document.hidden) { due = true; return; }
    due = false;
    refresh();
  }
  document.addEventListener("visibilitychange", function () { if (!document.hidden && due) { tick(); } });
  showToggle();
  window.setInterval(tick, seconds * 1000);
  window.completenessRefresh = refresh;  // for the browser tests
})();
