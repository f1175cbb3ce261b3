"""The configuration as it runs: one snapshot per version, what a snapshot builds (the policy choice, the limits and the reports on them), and its reload without a restart."""
