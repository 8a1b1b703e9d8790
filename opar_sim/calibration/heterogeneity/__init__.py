"""Fit a heterogeneous simulated agent to a record of repeated trials; check it on held-out tasks.

The record is any run directory whose ``episodes.jsonl`` gives, per run, the
task (``episode``), the outcome (``success``), the tool calls and, when known,
the task's features (``task_features``): an imported real-agent record or a
simulated run.  The model is a spec with the simulated agent (e.g.
``experiments/tau_airline_model.toml``): every world of it has a latent shift u
of the logit of plan quality, u = μ + b·x + σ·z (``task_effect_mean``,
``task_effect_slope``, ``task_effect_sd``; x the world's feature, z ~ N(0, 1)),
shared by the world's trials.

Fitting by simulated maximum likelihood.  The simulator is run once on a grid
of shifts u_g for every feature value x of the record (the *table*): per cell,
the success rate P(x, u_g) and the tool calls of successes and of failures.  A
task i with feature x_i and runs (y_ij, t_ij) then has the likelihood

    L_i(θ) = ∫ φ(u; μ + b·x_i, σ) Π_j P^y (1 − P)^(1−y) f_y(t_ij | x_i, u) du,

integrated by Gauss–Hermite quadrature over the table (linear interpolation
between grid points; f_y the cell's tool-call distribution, smoothed towards
the feature's pooled one).  The table depends on the model, not on θ, so the
likelihood of any θ and any subset of tasks costs no further simulation: the
task folds of the cross-validation reuse it.

Validation on what the fit did not see.  The tasks are split into k folds by
task id; each fold is predicted by the model fitted on the other folds:
pass^1 … pass^K (K the fewest trials of a task, at most 4), the mean tool calls
of successes and of failures, the tool calls per run (a two-sample
Kolmogorov–Smirnov statistic against draws of the model) and the spread of
successes over tasks (the variance over tasks of their successes in K runs,
which task heterogeneity changes at a given pass^1), each against the held-out
record.  Every p-value comes from records simulated from the fitted model with
the same tasks and runs per task (``RESAMPLES`` of them): a task's runs share one
difficulty and one world, so they are not the independent draws a formula (e.g.
``ks_2samp``'s) assumes.  The verdict (``Validation.fits``), stated in
docs/calibration.md before the results: the pooled out-of-fold row (every task
predicted once by a model that never saw it) has all of pass^k and both means
inside the record's task-bootstrap 95 % intervals and neither KS nor spread
rejected at 5 %; and no test of any fold (8 a fold) is rejected by Holm's
correction over all folds' tests together at ``FOLD_ALPHA``.  The in-sample row
is never a pass.

A latent task length (``lengths``, opt-in).  Tasks of one write count differ
in how many lookups they need: with ``lengths`` every world also needs r further
lookups (``tool_chain``'s ``extra_reads``), r drawn per world from a negative
binomial π(r; m, k) (mean m, size k; ``extra_reads_mean``, ``extra_reads_size``),
independent of u and of the writes, shared by the world's trials.  The table then
has a cell per (feature, r on ``LENGTH_GRID``, u), and a task's likelihood sums
over r with the weights π(r) (the mass between two grid points shared linearly
between them, the tail beyond the last one on it) inside the integral over u:

    L_i(θ) = Σ_r π(r; m, k) ∫ φ(u; μ + b·x_i, σ) Π_j P^y (1 − P)^(1−y) f_y(t_ij | x_i, r, u) du.

Every prediction (pass^k, the means, the draws and the simulated records) mixes
over (r, u) with the same weights: the table's rows are the (r, u) pairs.

Task length (``shape``, opt-in).  With ``shape`` = ``actions`` the table has one
cell per (feature, ground-truth action count) of the record, the model's world
stretched to that count (``tool_chain``'s ``actions``), so that a task's tool
calls can follow its recorded length.

The package, one concept a module: ``record`` (the record read from a run
directory), ``table`` (the simulated grid), ``likelihood`` (the effect and its
maximum-likelihood fit), ``predictions`` (the model's and the record's
statistics) and ``validation`` (the held-out check and its verdict).
"""

from opar_sim.calibration.heterogeneity.likelihood import (
    HERMITE,
    SMOOTHING,
    Effect,
    Fitted,
    cell_loglik,
    cell_weights,
    fit_effect,
    fit_structures,
    grid_weights,
    length_weights,
    loglik,
)
from opar_sim.calibration.heterogeneity.predictions import (
    BOOTSTRAP,
    KS,
    MODEL_DRAWS,
    ONE_SIDED,
    SPREAD,
    Stats,
    ks_distances,
    model_draws,
    parametric_pvalues,
    predict,
    predicted_histogram,
    record_statistics,
    record_stats,
    simulated_records,
    spread,
    success_histogram,
    task_bootstrap,
)
from opar_sim.calibration.heterogeneity.record import Key, Record, TaskRuns, load_record
from opar_sim.calibration.heterogeneity.table import (
    LENGTH_GRID,
    TABLE_TRIALS,
    U_GRID,
    Table,
    build_table,
    feature_changes,
    length_changes,
    shape_changes,
    table_cells,
)
from opar_sim.calibration.heterogeneity.validation import (
    FOLD_ALPHA,
    KS_ALPHA,
    MAX_K,
    RESAMPLES,
    Check,
    Validation,
    folds_by_task,
    validate,
)

__all__ = [
    "BOOTSTRAP",
    "FOLD_ALPHA",
    "HERMITE",
    "KS",
    "KS_ALPHA",
    "LENGTH_GRID",
    "MAX_K",
    "MODEL_DRAWS",
    "ONE_SIDED",
    "RESAMPLES",
    "SMOOTHING",
    "SPREAD",
    "TABLE_TRIALS",
    "U_GRID",
    "Check",
    "Effect",
    "Fitted",
    "Key",
    "Record",
    "Stats",
    "Table",
    "TaskRuns",
    "Validation",
    "build_table",
    "cell_loglik",
    "cell_weights",
    "feature_changes",
    "fit_effect",
    "fit_structures",
    "folds_by_task",
    "grid_weights",
    "ks_distances",
    "length_changes",
    "length_weights",
    "load_record",
    "loglik",
    "model_draws",
    "parametric_pvalues",
    "predict",
    "predicted_histogram",
    "record_statistics",
    "record_stats",
    "shape_changes",
    "simulated_records",
    "spread",
    "success_histogram",
    "table_cells",
    "task_bootstrap",
    "validate",
]
