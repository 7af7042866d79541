"""`flashssm profile`: characterise a Mamba workload on the GPU: operator breakdown, roofline,
per-kernel table, Chrome trace, report (flashssm/profile/cli.py has the command)."""
