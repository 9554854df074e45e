"""trainstack.towers: not implemented yet.

This distribution is an installable placeholder so that the monorepo's
packaging, pins and test matrix cover every layer. It exports nothing; the
layer is built in issue(s) 5 and 6.
"""
