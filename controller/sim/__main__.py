"""``python -m controller.sim``: run seeded simulation schedules (see ``controller.sim.runner``)."""

from controller.sim.runner import main

raise SystemExit(main())
