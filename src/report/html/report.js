(() => {
  "use strict";
  const cases = Array.from(document.querySelectorAll(".case"));
  const buttons = Array.from(document.querySelectorAll("[data-filter]"));
  const search = document.getElementById("search");
  const shown = document.getElementById("shown");
  const empty = document.getElementById("empty");
  let filter = "all";
  const matches = (c, q) =>
    (filter === "all" || c.dataset.status.split(" ").includes(filter)) &&
    (q === "" || c.dataset.name.toLowerCase().includes(q));
  function apply() {
    const q = search.value.trim().toLowerCase();
    let n = 0;
    for (const c of cases) {
      c.hidden = !matches(c, q);
      if (!c.hidden) n += 1;
    }
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.filter === filter));
    shown.textContent = n + " of " + cases.length + " shown";
    empty.hidden = n !== 0;
  }
  function fromHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    const want = p.get("status") || "all";
    filter = buttons.some((b) => b.dataset.filter === want) ? want : "all";
    search.value = p.get("q") || "";
    apply();
  }
  function toHash() {
    const p = new URLSearchParams();
    if (filter !== "all") p.set("status", filter);
    if (search.value) p.set("q", search.value);
    history.replaceState(null, "", "#" + p.toString());
  }
  for (const b of buttons) {
    b.addEventListener("click", () => { filter = b.dataset.filter; apply(); toHash(); });
  }
  search.addEventListener("input", () => { apply(); toHash(); });
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && document.activeElement !== search) { e.preventDefault(); search.focus(); }
    if (e.key === "Escape" && document.activeElement === search) { search.value = ""; apply(); toHash(); }
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
