# Slurm job scripts (doc/slurm.md), installed for users to copy and edit: $(pkgdatadir)/jobscripts.
jobscriptsdir = $(pkgdatadir)/jobscripts
dist_jobscripts_DATA = jobscripts/train.sbatch jobscripts/sweep.sbatch jobscripts/report.sbatch \
  jobscripts/burst-bg.sbatch jobscripts/train-3d.sbatch
# A one-node Slurm on this machine for trying them; the test runs them on one.
EXTRA_DIST += tools/slurm-local-up.sh tools/slurm-local-down.sh
dist_check_SCRIPTS += tests/test_slurm.sh
TESTS += tests/test_slurm.sh
