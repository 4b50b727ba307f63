"""How the pages write numbers: what the template filters (sources/templatetags/dashboard.py) and the
charts' legends (sources/pages/charts/figures.py) share. The formats an operator types back (shares,
durations, field minimums) are in sources/pages/forms.py, beside their parsers."""

# Every share on every page has this many decimals: one on one page and two on the next read as two
# different numbers.
PERCENT_DIGITS = 1
