"""
Compose releases with the accountant
====================================

Every release of a reading spends privacy. :func:`~dpcloak.privacy.privacy_spent` composes k
releases of a mechanism: for the Gaussian mechanism exactly (k releases of noise σ are one release
with sensitivity √k·Δ2), and optionally with ``dp_accounting``'s PLD or RDP accountants for comparison.
A :class:`~dpcloak.privacy.ReadingAccountant` enforces a budget: it is charged *before* each
release and refuses a release that would overspend. :func:`~dpcloak.privacy.privacy_report` says what
a day of hourly releases spends for one event (a few hours) and for a whole day's pattern.
"""

import matplotlib.pyplot as plt

from dpcloak.errors import BudgetExceededError
from dpcloak.privacy import GaussianMechanism, ReadingAccountant, privacy_report, privacy_spent

mechanism = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0)
print(f"one release: (0.5, 1e-6)-DP with σ = {mechanism.sigma:.3f}")

counts = list(range(1, 49))
closed = [privacy_spent(mechanism, readings=k, delta=1e-5).epsilon for k in counts]
for k in (1, 24, 48):
    rdp = privacy_spent(mechanism, readings=k, delta=1e-5, accountant="rdp").epsilon
    print(f"{k:2d} releases at δ = 1e-5: ε = {closed[k - 1]:.3f} exact, {rdp:.3f} by RDP, {0.5 * k:.1f} by adding up")

# %%
# A budget enforced before release: ε = 4 at δ = 1e-5 in total.
accountant = ReadingAccountant(mechanism=mechanism, epsilon_budget=4.0, delta_budget=1e-5)
print(f"the budget allows {accountant.remaining()} releases")
released = 0
try:
    while True:
        accountant.charge()  # raises before anything is spent when the next release would overspend
        released += 1
except BudgetExceededError as refused:
    print(f"release {released + 1} refused: {refused}")
print(f"spent after {released} releases: ε = {accountant.spent().epsilon:.3f}")

# %%
# A day of hourly releases: what one 3-hour event and the whole day's pattern are protected by.
report = privacy_report(mechanism, releases=24, window=3, delta=1e-5)
print(f"3-hour event: ε = {report.event.epsilon:.3f}; whole day: ε = {report.pattern.epsilon:.3f} (δ = 1e-5)")

fig, ax = plt.subplots(figsize=(6, 3.5), constrained_layout=True)
ax.plot(counts, closed, label="exact Gaussian composition")
ax.plot(counts, [0.5 * k for k in counts], ":", label="k · ε (adding up)")
ax.axhline(4.0, color="C3", ls="--", label="budget ε = 4")
ax.set(xlabel="releases k", ylabel="ε at δ = 1e-5", ylim=(0, 12), title="Gaussian releases compose like √k")
ax.legend()
plt.show()
