// Live updates of the console: the server renders the live part of the
// page and sends it as a server-sent event whenever it changes; this swaps
// it in. The fragment is the server's html/template output, with every
// value escaped there. Without this script the page works, reloaded by hand.
"use strict";
(function () {
  const live = document.getElementById("live");
  const conn = document.getElementById("conn");
  if (!live || !window.EventSource) return;
  const es = new EventSource("/console/events");
  es.addEventListener("live", (ev) => {
    live.innerHTML = ev.data;
    conn.textContent = "live";
    conn.dataset.state = "live";
  });
  es.onerror = () => { conn.textContent = "reconnecting"; conn.dataset.state = "reconnecting"; };
})();
