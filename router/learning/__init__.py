"""The router learns from the gateway's own traffic without keeping content: numeric features per step
(``features``), agreement labels from shadow calls (``agreement``), a small logistic model fitted on them
(``fit``), stored as an inspectable file (``model``), evaluated on held-out sessions before it serves
(``replay``)."""
