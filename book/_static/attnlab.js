// A display equation wider than the page scrolls sideways; keyboard users must be
// able to reach it (focus it, then use the arrow keys), so each one can take focus.
// <html data-attnlab-math="ready"> says the page's mathematics is laid out.
window.addEventListener("load", () => {
  const typeset = (window.MathJax && MathJax.startup && MathJax.startup.promise) || Promise.resolve();
  typeset.then(() => {
    for (const equation of document.querySelectorAll('mjx-container[display="true"]')) {
      equation.tabIndex = 0;
    }
    document.documentElement.dataset.attnlabMath = "ready";
  });
});
