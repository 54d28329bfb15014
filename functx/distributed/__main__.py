"""``python -m functx.distributed --nproc N script.py args``: start N processes of ``script.py``
on this machine with torch's launcher (``torch.distributed.run``, the code behind ``torchrun``),
each with the environment ``functx.distributed.initialize()`` reads. Any other option of
``torchrun`` may follow ``--nproc``; ``--nproc`` is ``--nproc_per_node`` with ``--standalone``
(one machine, a free rendezvous port)."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    """Run torch's launcher with ``--nproc N`` translated to its options."""
    from torch.distributed import run

    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per process (torchrun's default)
    args = list(sys.argv[1:] if argv is None else argv)
    nproc = "1"
    rest: list[str] = []
    while args and args[0].startswith("-"):  # options before the script
        a = args.pop(0)
        if a in ("--nproc", "--nproc-per-node", "--nproc_per_node"):
            nproc = args.pop(0)
        elif a.split("=", 1)[0] in ("--nproc", "--nproc-per-node", "--nproc_per_node"):
            nproc = a.split("=", 1)[1]
        else:  # another torchrun option, with its value when it takes one
            rest.append(a)
            if "=" not in a and args and not args[0].startswith("-") and len(args) > 1:
                rest.append(args.pop(0))
    run.main(["--standalone", "--nnodes", "1", "--nproc_per_node", nproc, *rest, *args])


if __name__ == "__main__":
    main()
