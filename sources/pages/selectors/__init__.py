"""Read-side queries of the pages: overview (with the run page's lists), source, run, proxies, quality."""
