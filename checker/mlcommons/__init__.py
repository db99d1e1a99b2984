"""MLCommons submission trees: the layouts MLCommons publishes its results in, read and checked.

    from levelfield.checker.mlcommons.layout import detect_layout
    detect_layout(Path("training_results_v4.0/NVIDIA"))      # "mlcommons-training"
    from levelfield.checker.mlcommons.training import check_training_tree
    report = check_training_tree(Path("training_results_v4.0/NVIDIA"), ruleset="4.0.0")
    report.findings, report.scores
    from levelfield.checker.mlcommons.inference import check_inference_tree
    report = check_inference_tree(Path("inference_results_v4.1"))   # a row per result, its official figure

Layouts (`layout.py`), the coded findings these trees get (`codes.py`),
MLCommons Training trees (`training.py`: every log read robustly through the
bounded tree reader, scored exactly as mlperf_logging's result summarizer
scores them) and the calls into mlperf_logging's own engines (`peer.py`: its
compliance rules, RCP data and system-description field list, applied to
copies of the files, so nothing in the audited folder is written).
MLCommons Inference trees (`inference.py`: every LoadGen summary and detail
log, accuracy folder and compliance verdict, each result's LoadGen metric computed
from its detail log as levelfield computes its own; the readers of the text files in
`loadgen_files.py`, mlperf.conf's minimums as data in `rules/mlcommons/inference.yaml`),
and each result scored as its round's MLCommons checker scores it (`rounds.py`: the
round's tables in `rules/mlcommons/inference_vX.Y.yaml`; `official.py`: the figure,
the accuracy verdict, what the round does not know).
"""
