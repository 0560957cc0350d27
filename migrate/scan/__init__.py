"""Stage 1, scan: find every TorchScript use and CUDA 12.8 pin, file by file.

In: the paths named on the command line and a ScanOptions (rules, excludes, CUDA target).
Out: a ScanResult (findings with their fixes, error records) and, on the Scanner, what the
later stages read: the jobs by display path, each file's result (hints for the facts), the
resolved re-exports and the repository pass's merged facts.

discover.py lists the files (git-aware, excludes); checkset.py picks the checks
(migrate/checks/) and their text prefilter and walker.py runs them in one pass; engine.py is
the scanner (the process pool, re-exports, repository pass), workers.py what it does to each
file, file_analysis.py one file's analysis; cache.py keeps results between runs. The walk,
the prefilter's search and the name resolution live in migrate/analysis/.
"""
