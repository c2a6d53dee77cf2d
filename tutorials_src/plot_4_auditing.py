"""
Auditing a mechanism or a black box: ACCEPT, REJECT, and what is out of reach
=============================================================================

*For whoever must check a privacy claim they did not write* — a vendor's "(ε, δ)-DP" sensor
firmware, a colleague's noise calibration, dpcloak itself. :mod:`dpcloak.audit` tests the claim
from the mechanism's **outputs only**, with the property testers of McMillan's thesis (Part IV,
Algorithms 4–6): call the mechanism many times on two neighbouring inputs, bin the outputs, and
decide whether the two output distributions are as close as the claim says.

The answer is a verdict with its evidence, and it comes with a price: by Theorem 10.2 of the
thesis, *verifying a claim is as hard as breaking it*. A claim is only testable at parameters where
a violation could be seen with the number of queries you can afford. This tutorial shows both:
a correct mechanism accepted, broken ones rejected, and the claims no budget can check.
"""

# %%
# The claim under test
# --------------------
# A Gaussian mechanism claims (ε, δ) = (0.5, 0.05) for a query of ℓ2 sensitivity Δ2 = 1. Its
# worst neighbouring pair is two databases whose answers differ by exactly Δ2, so the audit runs
# it on the answers ``0`` and ``1``. An auditor needs nothing but a function
# ``mechanism(database, rng, size)`` returning ``size`` outputs (``vectorized=True``), or
# ``mechanism(database, rng)`` returning one.
import matplotlib.pyplot as plt
import numpy as np

from dpcloak.audit import adp_tester_queries, audit_blackbox, delta_epsilon
from dpcloak.audit.suite import out_of_reach
from dpcloak.privacy import GaussianMechanism

EPSILON, DELTA = 0.5, 0.05
NEIGHBOURS = (0.0, 1.0)
correct = GaussianMechanism(epsilon=EPSILON, delta=DELTA, sensitivity=1.0)
print(correct.guarantee())


def honest(answer, rng, size):
    """The shipped mechanism, called ``size`` times on one database."""
    return correct.privatize(np.full(size, answer), rng=rng)


def halved(answer, rng, size):
    """A broken build: the same mechanism with half the noise (a unit error in a config file)."""
    return answer + 0.5 * (correct.privatize(np.full(size, answer), rng=rng) - answer)


# %%
# Auditing a correct and a broken mechanism
# -----------------------------------------
# ``alpha`` is the tester's accuracy: a pair whose true ``δ_ε`` exceeds the claimed δ by ``2α`` or
# more is rejected (with probability ≥ 2/3 over the audit's own randomness); a pair within the claim
# is accepted. The number of queries grows as ``1/α²``. The float Gaussian's claim holds for
# idealised real-valued noise, so its low-order bits are read with ``claim_scope="idealised"``
# (below, the released doubles are read bit by bit instead).
audits = {}
for name, mechanism in (("correct σ", honest), ("σ halved", halved)):
    audits[name] = audit_blackbox(mechanism, NEIGHBOURS, epsilon=EPSILON, delta=DELTA, alpha=0.05, rng=1,
                                  vectorized=True, claim_scope="idealised", event_queries=20_000)
    result = audits[name]
    print(f"{name:10s} {result.verdict}: {result.worst.reason} ({result.queries:,} queries)")

# %%
# What the tester saw
# -------------------
# The audit discretises the outputs into bins chosen on a pilot sample; its verdict concerns those
# bins. On the binned distributions the exact ``δ_ε = max_E P(E) − e^ε Q(E)`` can be computed
# (:func:`dpcloak.audit.delta_epsilon`): the privacy curve ``ε ↦ δ_ε`` of the correct mechanism
# passes under the claimed point, the broken one far above it.
rng = np.random.default_rng(2)
draws = 200_000
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), constrained_layout=True)
edges = np.linspace(-8.0, 9.0, 86)
for ax, (name, mechanism) in zip(axes[:2], (("correct σ", honest), ("σ halved", halved)), strict=True):
    for answer, colour in zip(NEIGHBOURS, ("C0", "C1"), strict=True):
        ax.hist(mechanism(answer, rng, draws), bins=edges, density=True, histtype="step", color=colour, lw=1.5,
                label=f"database with answer {answer:g}")
    ax.set(xlabel="released value (query units)", ylabel="probability density",
           title=f"{name}: {audits[name].verdict}")
    ax.legend(fontsize="small", loc="upper left")
axes[1].sharey(axes[0])
epsilons = np.linspace(0.0, 3.0, 61)
for name, mechanism, colour in (("correct σ", honest, "C2"), ("σ halved", halved, "C3")):
    bins = audits[name].pairs[0].binning
    p = np.bincount(bins.index(mechanism(NEIGHBOURS[0], rng, draws)), minlength=bins.n_bins) / draws
    q = np.bincount(bins.index(mechanism(NEIGHBOURS[1], rng, draws)), minlength=bins.n_bins) / draws
    axes[2].plot(epsilons, [delta_epsilon(p, q, e).value for e in epsilons], color=colour,
                 label=f"{name} ({bins.n_bins} bins)")
axes[2].plot([EPSILON], [DELTA], "k*", markersize=12, label=f"claim ({EPSILON:g}, {DELTA:g})")
axes[2].set(xlabel=r"$\varepsilon$", ylabel=r"$\delta_\varepsilon$ of the binned outputs",
            title="Privacy curve seen by the tester")
axes[2].legend(fontsize="small")
plt.show()

# %%
# A black box that leaks in bits the bins cannot see
# --------------------------------------------------
# Binning is post-processing, so an honest mechanism passes; but a leak confined to an event that is
# not a union of bins is invisible to the tester. The audit therefore also runs **event tests**:
# repeated output values (atoms) and the lowest mantissa bits, chosen on a pilot and tested on fresh
# outputs. Here a vendor's black box writes one secret bit of its input into the last bit of an
# otherwise perfect Gaussian output: identical histograms, true δ = 1.


def vendor_box(answer, rng, size):
    """Opaque to the auditor: correct noise, then the input's parity in the lowest mantissa bit."""
    bits = correct.privatize(np.full(size, answer), rng=rng).view(np.uint64)
    return ((bits & ~np.uint64(1)) | np.uint64(int(answer) & 1)).view(np.float64)


leak = audit_blackbox(vendor_box, NEIGHBOURS, epsilon=EPSILON, delta=DELTA, alpha=0.05, rng=3, vectorized=True,
                      claim_scope="idealised", event_queries=20_000)
print(f"vendor box: {leak.verdict} — tester alone: {leak.worst.test.verdict}")
print(f"  {leak.worst.reason}")

# %%
# The same audit also shows why dpcloak releases with exact samplers by default: read bit by bit
# (``claim_scope="released"``, the claim about the doubles actually sent), the *correct* float
# Gaussian fails its claim too — its rounding structure differs between neighbours (Mironov 2012).
released = audit_blackbox(honest, NEIGHBOURS, epsilon=EPSILON, delta=DELTA, alpha=0.05, rng=4, vectorized=True,
                          claim_scope="released", event_queries=20_000)
print(f"float Gaussian, released doubles: {released.verdict} — {released.worst.reason}")

# %%
# What is out of reach at the budget
# ----------------------------------
# Algorithm 4 needs ``λ = max{4n, 4k/f}(1 + e^{2ε})/α²`` queries per database to reject a violation of
# size ``2α``. A deployment's δ is 10⁻⁵ or smaller: catching a violation of that size needs
# ``α = δ/2``: of the order of 10¹² queries per database (the exact numbers are printed below) — and
# Theorem 10.7 shows that no tester does fundamentally better. Pure ε-DP (δ = 0) cannot be verified at
# all without side information (Theorem 10.5).
# That is why dpcloak's own audit (``dpcloak audit``) checks its mechanisms at (0.5, 0.05), where a
# broken calibration is visible; the mechanisms are the same code at every parameter.
alphas = np.geomspace(1e-6, 0.2, 60)
fig, ax = plt.subplots(figsize=(7, 3.8), constrained_layout=True)
for eps, style in ((0.5, "C0-"), (2.0, "C1--")):
    ax.loglog(2 * alphas, [adp_tester_queries(n=10, epsilon=eps, alpha=a, failure_probability=2 / 9) for a in alphas],
              style, label=f"Algorithm 4, 10 bins, ε = {eps:g}")
used = audits["correct σ"].pairs[0].test
ax.plot(2 * used.alpha, used.expected_queries, "k*", markersize=12, label="the audits above")
ax.axvline(1e-5, color="C3", linestyle=":", label="a deployment's δ = 10⁻⁵")
ax.axhline(1e9, color="0.5", linestyle=":", label="10⁹ queries")
ax.set(xlabel=r"smallest detectable violation $2\alpha$ (excess of $\delta_\varepsilon$ over $\delta$)",
       ylabel="queries per database",
       title="The price of verification")
ax.legend(fontsize="small")
plt.show()

for line in out_of_reach(epsilon=EPSILON, delta=1e-5):
    print("-", line)

# %%
# Reading a verdict
# -----------------
# * **REJECT** is evidence: with probability ≥ 2/3 the claim is violated on these inputs, by at
#   least the stated proximity (or in the named event). The reason names the statistic and threshold.
# * **ACCEPT** is not a proof of privacy: it says no violation of size ``2α`` was seen *on the bins and
#   events tested, for the neighbouring pairs given*. Give the worst pairs
#   (:func:`dpcloak.privacy.sensitivity.worst_neighbours` for a linear model) and read ``notes``:
print(audits["correct σ"].notes)
