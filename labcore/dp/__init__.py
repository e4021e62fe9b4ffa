"""Differential privacy you can account for, and gradient inversion (why it matters).

    experiments.py  the config grids (HR@10 against epsilon, the curious server against epsilon, the inversion's
                    defenses) at smoke and full size, and the runs behind them
    plots.py        HR@10 / precision against epsilon, epsilon per round, PSNR per defense, the images
    cards.py        figure cards dp-hr-epsilon, dp-curious-server, dp-inversion (lab experiments, no paper numbers)
    page.py         the Privacy page; presets.py its sidebar links; exercises.py the notebook's checks
The mechanism and the accountant are `labcore.privacy.dp`; the attack on images `inversion.py` (on the FL-algorithms topic's digits model);
the curious server `labcore.colr.curious_server`.
"""
