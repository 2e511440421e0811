// Copy buttons: <button data-copy="#element-id">. Without JavaScript the command
// is still there to select by hand, so nothing else depends on this.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const text = source.textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Clipboard API refused (plain http, old browser): select the text instead.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    document.execCommand("copy");
  }
  const label = button.textContent;
  button.textContent = "Copied";
  button.setAttribute("data-copied", "true");
  setTimeout(() => { button.textContent = label; }, 1500);
});

// A diagnosis page opens at its verdict, with the first fix right under it (the link
// after submitting carries #diagnosis; a link shared without it scrolls here too).
const answer = document.querySelector("[data-scroll-on-load]");
if (answer && !window.location.hash && window.scrollY === 0) {
  answer.scrollIntoView({ block: "start" });
}

// A validation run's log follows its newest lines while the page polls, unless the
// reader has scrolled up in it: then it stays where they were reading.
let logPlace = null;
document.addEventListener("htmx:beforeSwap", () => {
  const log = document.querySelector("pre[data-follow]");
  logPlace = log && {
    top: log.scrollTop,
    atEnd: log.scrollTop + log.clientHeight >= log.scrollHeight - 4,
  };
});
function followLog() {
  const log = document.querySelector("pre[data-follow]");
  if (!log) return;
  log.scrollTop = logPlace && !logPlace.atEnd ? logPlace.top : log.scrollHeight;
  logPlace = null;
}
document.addEventListener("htmx:afterSettle", followLog);
followLog();
