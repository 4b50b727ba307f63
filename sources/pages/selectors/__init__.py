"""Read-side queries of the pages, a module per page: overview (and the run page's lists), source, run, proxies, quality."""
