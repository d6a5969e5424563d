// Follows a running replica's log on the run page: asks the server for what was appended since
// the last offset and adds it as text (never as HTML). Without JavaScript the page still shows
// the log as it was when loaded. When the run ends, the page's status shows how it ended.
"use strict";
(function () {
  const log = document.getElementById("log");
  const state = document.getElementById("follow-state");
  const status = document.getElementById("status");
  if (!log || !log.dataset.follow) {
    return;
  }
  let offset = Number(log.dataset.offset) || 0;
  async function poll() {
    let doc;
    try {
      const response = await fetch(log.dataset.follow + "?offset=" + offset, {
        credentials: "same-origin",
      });
      if (!response.ok) {
        throw new Error("HTTP " + response.status);
      }
      doc = await response.json();
    } catch (err) {
      if (state) {
        state.textContent = "follow paused (" + err.message + "), retrying";
      }
      setTimeout(poll, 3000);
      return;
    }
    const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    if (doc.lines.length) {
      log.append(document.createTextNode(doc.lines.join("\n") + "\n"));
      if (atEnd) {
        log.scrollTop = log.scrollHeight;
      }
    }
    offset = doc.offset;
    if (doc.running) {
      if (state) {
        state.textContent = "following";
      }
      setTimeout(poll, 1000);
      return;
    }
    if (status && doc.status) {
      status.textContent = doc.status;
      status.className = "status status-" + doc.status.replace(/[^a-z-]/g, "");
    }
    if (state) {
      state.textContent =
        "the run has ended: " + (doc.status || "") + (doc.reason ? " (" + doc.reason + ")" : "");
    }
  }
  setTimeout(poll, 1000);
})();
