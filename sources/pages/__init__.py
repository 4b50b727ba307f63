"""The operator pages: views, forms, the selectors they read through and the charts they draw."""
