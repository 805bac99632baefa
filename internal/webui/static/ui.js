// intentfs ui: the live event list and the approve/deny buttons. Plain
// script, no framework: text from the daemon is only ever set with
// textContent, never parsed as HTML.
"use strict";

(function () {
  const body = document.body;
  const csrf = document.querySelector('meta[name="intentfs-csrf"]').content;
  const eventsURL = body.dataset.events;
  const approvalsURL = body.dataset.approvals;
  const statusURL = body.dataset.status;
  const list = document.getElementById("event-list");
  const live = document.getElementById("live");
  const maxEvents = 300;
  let pendingKey = null;

  function describe(ev) {
    const who = ev.pid ? ` pid ${ev.pid} ${ev.comm || ""} (uid ${ev.uid})` : "";
    const path = ev.path + (ev.path2 ? " ← " + ev.path2 : "");
    switch (ev.kind) {
      case "change": return `${ev.time} ok ${ev.event} ${path}${who}`;
      case "denied": return `${ev.time} DENIED ${ev.op} ${path}${who}: ${ev.reason}`;
      case "held": return `${ev.time} HELD ${ev.op} ${path}${who} as ${ev.id}: ${ev.reason}`;
      case "decided": return `${ev.time} ${(ev.verdict || "").toUpperCase()} ${ev.id} by ${ev.by || ""} ${ev.reason || ""}`;
      case "dropped": return `${ev.time} (${ev.dropped} events were missed: the page could not keep up)`;
      case "gone": return `the daemon ended the stream: ${ev.reason}`;
    }
    return `${ev.time} ${ev.kind} ${ev.event || ""} ${path}${who} ${ev.reason || ""}`;
  }

  function addEvent(ev) {
    if (!list) return;
    const li = document.createElement("li");
    li.className = "ev-" + ev.kind + (ev.code && ev.code.startsWith("WOULD") ? " would" : "");
    li.textContent = describe(ev);
    list.insertBefore(li, list.firstChild);
    while (list.children.length > maxEvents) list.removeChild(list.lastChild);
  }

  // pendingRows names the waiting entries a part of the page shows.
  function pendingRows(root) {
    return Array.from(root.querySelectorAll('tr[id^="pending-"]')).map((r) => r.id).join(",");
  }

  // refreshApprovals reloads the waiting list, but replaces it only when
  // an entry came or went: a button the human is about to press is not
  // swapped for a copy under the pointer.
  async function refreshApprovals(force) {
    if (!approvalsURL) return;
    const resp = await fetch(approvalsURL, { credentials: "same-origin", cache: "no-store" });
    if (!resp.ok) return;
    // The fragment is rendered by html/template on the server: escaped.
    const tpl = document.createElement("template");
    tpl.innerHTML = await resp.text();
    const section = document.getElementById("approvals");
    if (!force && pendingRows(tpl.content) === pendingRows(section)) return;
    section.replaceChildren(tpl.content);
  }

  // refreshStatus reloads the counters and the sessions, at most every
  // two seconds however many events arrive.
  const statusEvery = 2000;
  let statusTimer = null;
  function refreshStatusSoon() {
    if (!statusURL || statusTimer) return;
    statusTimer = setTimeout(async () => {
      try {
        const resp = await fetch(statusURL, { credentials: "same-origin", cache: "no-store" });
        if (!resp.ok) return;
        const tpl = document.createElement("template");
        tpl.innerHTML = await resp.text();
        for (const [panel, section] of [["status-panel", "status"], ["sessions-panel", "sessions"]]) {
          const got = tpl.content.getElementById(panel);
          if (got) document.getElementById(section).replaceChildren(...got.childNodes);
        }
      } finally {
        statusTimer = null;
      }
    }, statusEvery);
  }

  function onEvent(msg) {
    let ev;
    try { ev = JSON.parse(msg.data); } catch (e) { return; }
    if (ev.kind === "pending") {
      const key = (ev.pending || []).join(",");
      if (key !== pendingKey) {
        pendingKey = key;
        refreshApprovals();
      }
      return;
    }
    addEvent(ev);
    if (ev.kind === "held" || ev.kind === "decided") refreshApprovals();
    refreshStatusSoon();
  }

  if (eventsURL) {
    const src = new EventSource(eventsURL);
    src.onopen = () => { live.textContent = "live"; live.className = "live on"; };
    src.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
    src.onmessage = onEvent;
  } else if (live) {
    live.textContent = "";
  }

  // Decisions: sent with the CSRF token in a header; without script the
  // form posts itself with the token in a hidden field.
  document.addEventListener("submit", async (e) => {
    const form = e.target;
    if (!form.classList || !form.classList.contains("decide")) return;
    e.preventDefault();
    const data = new FormData(form, e.submitter);
    form.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    const resp = await fetch(form.getAttribute("action"), {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: { "X-Intentfs-Csrf": csrf },
      body: new URLSearchParams(data),
    });
    const text = await resp.text();
    let answer = {};
    try { answer = JSON.parse(text); } catch (err) { answer = { error: `refused (${resp.status}): ${text}` }; }
    if (!answer.ok) {
      const p = document.createElement("p");
      p.className = "error decide-error";
      p.textContent = answer.error || ("refused: " + resp.status);
      form.appendChild(p);
      form.querySelectorAll("button").forEach((b) => { b.disabled = false; });
      return;
    }
    refreshApprovals(true);
  });
})();
