"""Process exit codes of the kit (CLI and Scrapy runner).

0 and 3 come from the service's verdict; the others say why there is none.
The non-verdict codes follow BSD sysexits so schedulers can tell them apart.
"""

COMPLETE = 0  # verdict complete or paused
INCOMPLETE = 3  # verdict incomplete: do not run the next pipeline step
USAGE = 2  # bad command line (argparse's own code)
BAD_INPUT = 65  # EX_DATAERR: unreadable/invalid report, or the service rejected it (409, 413, 422, other 4xx)
SPOOLED = 75  # EX_TEMPFAIL: not delivered (unreachable, or 5xx/429); report spooled, sent first on the next call
AUTH = 77  # EX_NOPERM: token missing, unknown (401) or not allowed for this source (403)
# A Scrapy crawl with JOBDIR stopped and resumable: nothing posted yet; run the same command again to go on.
RESUMABLE = 75
