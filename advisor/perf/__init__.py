"""The performance model: step times of a replica, the estimate for a deployment, calibration
against published measurements and validation. Imports catalog and physics only."""
