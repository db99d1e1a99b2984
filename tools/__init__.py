"""levelfield.tools: user-facing utilities (installed from the repository folder `tools/`).

    package.py       runs + system description -> submission tree (`levelfield package`)
    leaderboard/     tables from clean trees: Markdown, CSV, JSON, HTML (`levelfield leaderboard`)
    fuzz/            damaged copies of a submission through the checker (`make fuzz`)
    device_check/    what an offline GPU node needs for `levelfield device-check`: its wheels (`make wheels`), node.sh

The system description (`levelfield sysinfo`) and the accelerators are host
facts every stage reads: they live on the ground floor (`levelfield.ground`).
The tools import the checker in two places only: the leaderboard asks it for a
verdict, the fuzzer drives it (docs/architecture.md, Layers).
"""
