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
