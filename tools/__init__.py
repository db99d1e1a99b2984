"""levelfield.tools: user-facing utilities (installed from the repository folder `tools/`).

    sysinfo.py       the system description (`levelfield sysinfo`)
    accelerators.py  NVIDIA accelerators through NVML (nvidia-ml-py), when a driver is present
"""
