(function () {
  "use strict";
  var action = "", category = "";
  function match(a, c) { return (!action || a === action) && (!category || c === category); }
  function apply() {
    var i, j, rows = document.querySelectorAll("tr.finding");
    for (i = 0; i < rows.length; i++) {
      rows[i].hidden = !match(rows[i].getAttribute("data-action"), rows[i].getAttribute("data-category"));
    }
    var lists = document.querySelectorAll("section.findings");
    for (i = 0; i < lists.length; i++) {
      var all = lists[i].querySelectorAll("tr.finding"), shown = 0;
      for (j = 0; j < all.length; j++) { if (!all[j].hidden) { shown++; } }
      lists[i].hidden = all.length > 0 && shown === 0;
    }
    var files = document.querySelectorAll("section.file");
    for (i = 0; i < files.length; i++) {
      var keys = JSON.parse(files[i].getAttribute("data-keys") || "[]"), any = !action && !category;
      for (j = 0; !any && j < keys.length; j++) { any = match(keys[j][0], keys[j][1]); }
      files[i].hidden = !any;
    }
  }
  function reveal(id) {
    var el = id && document.getElementById(id);
    if (!el) { return; }
    var section = el.closest("section");
    if (section) { section.hidden = false; }
    for (var d = el.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) { d.open = true; }
  }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("[data-filter-action]");
    if (b) {
      action = b.getAttribute("data-filter-action");
      var all = document.querySelectorAll("[data-filter-action]");
      for (var i = 0; i < all.length; i++) { all[i].setAttribute("aria-pressed", String(all[i] === b)); }
      apply();
      return;
    }
    var a = ev.target.closest("a[href^='#']");
    if (a) { reveal(decodeURIComponent(a.getAttribute("href").slice(1))); }
  });
  var select = document.getElementById("filter-category");
  if (select) { select.addEventListener("change", function () { category = select.value; apply(); }); }
  window.addEventListener("hashchange", function () { reveal(location.hash.slice(1)); });
  if (location.hash) {
    reveal(location.hash.slice(1));
    var t = document.getElementById(location.hash.slice(1));
    if (t) { t.scrollIntoView(); }
  }
})();
