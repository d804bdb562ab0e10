"""The scenario's options restricted for the explanations' variants (explain/whynot.py): the
next-best fleet without acquiring more of a system type, the fleet without an acquisition mode, the
plan with every job that can run on one accelerator put there."""

from __future__ import annotations

import dataclasses

from planner.data.catalog import is_held


def _keep(opts, keep):
    """Options whose demands may use only the offers keep(demand, offer) allows (the rest as they are)."""
    eligible = {dk: [oid for oid in lst if keep(dk, opts.offers[oid])] for dk, lst in opts.eligible.items()}
    return dataclasses.replace(opts, eligible=eligible, by_system={})


def without_new(opts, system: str):
    """Options whose demands may use no offer of `system` but the systems already owned (is_held):
    what is held is sunk, so the next-best fleet keeps it (an expert review: the next best without
    h100-sxm-x8 dropped the 4 nodes the company owns and bought 10 RTX PRO 6000 servers)."""
    return _keep(opts, lambda dk, o: o.system != system or is_held(o))


def accelerators_with_options(opts) -> set[str]:
    return {o.accelerator for lists in (opts.serve, opts.batch, opts.edge) for lst in lists.values() for o in lst}


def only_on(opts, acc: str):
    """Options where every demand that has configurations on `acc` keeps only those (its hosted
    API offers too are left out: it runs on `acc`, not on someone's endpoint)."""
    def keep(lists: dict) -> dict:
        return {dk: ([o for o in lst if o.accelerator == acc] if any(o.accelerator == acc for o in lst) else lst)
                for dk, lst in lists.items()}
    moved = set(jobs_on(opts, acc))
    return dataclasses.replace(opts, serve=keep(opts.serve), batch=keep(opts.batch), edge=keep(opts.edge),
                               api={dk: offers for dk, offers in opts.api.items() if dk not in moved})


def jobs_on(opts, acc: str) -> list[str]:
    """The demands that can run on `acc`."""
    return sorted(dk for lists in (opts.serve, opts.batch, opts.edge) for dk, lst in lists.items()
                  if any(o.accelerator == acc for o in lst))


def without_acquisition(opts, mode: str):
    """Options whose demands may use no offer acquired as `mode` (the rest as they are)."""
    return _keep(opts, lambda dk, o: o.acquisition != mode)


def api_only(opts):
    """Options where every demand a hosted API may take (options.api) may use no offer of its own:
    what putting all such serving on APIs costs, beside the plan (the startup's 'API or self-host'
    question, the expert review); batch work and demands no API serves keep their offers."""
    return _keep(opts, lambda dk, o: not opts.api.get(dk))
