// What a page should not have (tests/console/test_browser.py runs this in each page):
// form controls without a label, several h1, no main or nav landmark, no language, and
// text whose contrast against its background is below 4.5:1 (WCAG 2.2 AA; large text
// is not singled out, so this is stricter than AA). Returns the problems found.
() => {
  const problems = [];
  if (!document.documentElement.lang) problems.push("no lang on <html>");
  if (document.querySelectorAll("h1").length !== 1) problems.push("not exactly one h1");
  if (!document.querySelector("main")) problems.push("no <main> landmark");
  if (!document.querySelector("nav")) problems.push("no <nav> landmark");
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden") continue;
    if (!(el.labels && el.labels.length) && !el.getAttribute("aria-label")) {
      problems.push("unlabelled control " + (el.id || el.name));
    }
  }
  const rgb = (text) => (text.match(/[\d.]+/g) || []).map(Number);
  const luminance = ([r, g, b]) => {
    const c = [r, g, b].map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const parts = rgb(getComputedStyle(node).backgroundColor);
      if (parts.length === 3 || (parts.length === 4 && parts[3] > 0.9)) return parts.slice(0, 3);
    }
    return [255, 255, 255];
  };
  // A path (code.path) that wraps must wrap right after a slash, never inside a name
  // (unless one name is wider than its box, which nothing can help).
  for (const el of document.querySelectorAll("code.path")) {
    const box = el.getBoundingClientRect();
    let last = null;
    let previous = "";
    for (const node of [...el.childNodes].filter((n) => n.nodeType === 3)) {
      for (let i = 0; i < node.textContent.length; i += 1) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        const char = node.textContent[i];
        if (last && rect.top > last.top + last.height / 2 && previous !== "/") {
          const widest = Math.max(...el.textContent.split("/").map((n) => n.length));
          if (widest * rect.width < box.width) {
            problems.push(`path "${el.textContent}" broken inside a name, before "${char}"`);
          }
        }
        last = rect;
        previous = char;
      }
    }
  }
  let checked = 0;
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    const hidden = style.visibility === "hidden" || style.clip === "rect(0px, 0px, 0px, 0px)";
    if (!box.width || !box.height || hidden) continue;
    if (box.right < 0 || box.bottom < 0) continue;  // moved off screen (the skip link)
    const fg = luminance(rgb(style.color));
    const bg = luminance(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    checked += 1;
    if (ratio < 4.5) {
      const text = el.textContent.trim().slice(0, 30);
      problems.push(`contrast ${ratio.toFixed(2)} for "${text}"`);
    }
  }
  if (!checked) problems.push("no text checked");
  return problems;
}
