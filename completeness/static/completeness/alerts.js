// An alert's acknowledge link from before links named their source in the query (/alerts/#ack-shop):
// the server never sees the #part, so where that row is not listed (the problem ended) the page
// loads once more with ?ack=shop, and says what became of the source instead of showing nothing.
(() => {
  const named = location.hash.match(/^#ack-([a-z0-9][a-z0-9._-]{0,99})$/);
  const query = new URLSearchParams(location.search);
  if (named && !document.getElementById(`ack-${named[1]}`) && query.get("ack") !== named[1]) {
    query.set("ack", named[1]);
    location.replace(`${location.pathname}?${query}${location.hash}`);
  }
})();
