// The review form: "Add a fix row" appends a blank fix form. Without JavaScript the one
// blank row the page always ends with still adds a fix, one per save.
const addButton = document.querySelector("[data-add-fix-row]");
const template = document.getElementById("empty-fix-row");
const total = document.querySelector("input[name$='-TOTAL_FORMS']");
if (addButton && template && total) {
  addButton.hidden = false;
  addButton.addEventListener("click", () => {
    const index = Number(total.value);
    const html = template.innerHTML
      .replaceAll("__prefix__", String(index))
      .replaceAll("__n__", String(index + 1));
    document.querySelector("[data-fix-rows]").insertAdjacentHTML("beforeend", html);
    total.value = String(index + 1);
    document.getElementById(`id_fixes-${index}-summary`).focus();
  });
}
