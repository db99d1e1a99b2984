"""levelfield.tools: user-facing utilities (installed from the repository folder `tools/`).

    sysinfo.py       the system description (`levelfield sysinfo`)
    accelerators.py  NVIDIA accelerators through NVML (nvidia-ml-py), when a driver is present
    package.py       runs + system description -> submission tree (`levelfield package`)
    leaderboard/     tables from clean trees: Markdown, CSV, JSON, HTML (`levelfield leaderboard`)
    calibrate.py     quality targets and reference convergence points from reference runs
    fuzz/            damaged copies of a submission through the checker (`make fuzz`)
"""
