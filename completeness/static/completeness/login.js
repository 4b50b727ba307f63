// A link from an alert names a place in a page (/alerts/#ack-shop, the source's acknowledge form):
// the browser keeps the #part through the redirect to this login but never sends it to the server,
// so `next` lacks it and the on-call landed at the top of the page, a screen or two from the form.
(() => {
  const next = document.querySelector('form input[name="next"]');
  if (next && next.value && !next.value.includes("#") && location.hash.length > 1) {
    next.value += location.hash;
  }
})();
