"""The financing offers a plan may choose for the servers it buys (`optimize/financing.py`):
every offer of the finance terms file (catalog/finance/terms.yaml: a finance lease,
instalments; each sourced or labelled an estimate there), when the requirements ask the
plan to choose (`finance.financing: optimise`); none otherwise."""

from __future__ import annotations

import dataclasses

from gpusolve.load.finance import load_terms
from gpusolve.models.money import FinanceTerms, terms_of
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir


def offers(reqs: Requirements, terms: FinanceTerms) -> tuple[ir.FinanceOffer, ...]:
    """The terms file's offers, in name order, valued at the requirements' discount rate."""
    if reqs.finance.financing != "optimise":
        return ()
    return tuple(
        ir.FinanceOffer(name=name, **terms_of(f), discount_rate=reqs.finance.discount_rate)
        for name, f in sorted(terms.financing.items())
    )


def with_financing(instance: ir.Instance, reqs: Requirements) -> ir.Instance:
    """The instance with the offers its plan may choose."""
    found = offers(reqs, load_terms()) if reqs.finance.financing == "optimise" else ()
    return dataclasses.replace(instance, financing=found) if found else instance
