# Slurm job scripts (doc/slurm.md), installed for users to copy and edit: $(pkgdatadir)/jobscripts.
jobscriptsdir = $(pkgdatadir)/jobscripts
dist_jobscripts_DATA = jobscripts/train.sbatch jobscripts/sweep.sbatch jobscripts/report.sbatch \
  jobscripts/burst-bg.sbatch jobscripts/train-3d.sbatch
# The installed copies' default decks are the installed ones (SURGE_INPUTS, $(pkgdatadir)/inputs).
install-data-hook: install-jobscripts-inputs
install-jobscripts-inputs:
	for f in $(dist_jobscripts_DATA); do \
	  sed -i 's|^SURGE_INPUTS=$${SURGE_INPUTS:-inputs}$$|SURGE_INPUTS=$${SURGE_INPUTS:-$(inputsdir)}|' \
	    "$(DESTDIR)$(jobscriptsdir)/$$(basename "$$f")" || exit 1; \
	done
.PHONY: install-jobscripts-inputs
# A one-node Slurm on this machine for trying them; the test runs them on one.
EXTRA_DIST += tools/slurm-local-up.sh tools/slurm-local-down.sh
dist_check_SCRIPTS += tests/test_slurm.sh
TESTS += tests/test_slurm.sh
