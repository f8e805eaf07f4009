"""RL algorithms for device-control agents.

``functional`` holds the pure tensor math (Monte-Carlo returns, V-trace, Retrace, DigiRL
advantages and filters, the DistRL replay priority); the algorithm modules build their losses on
it. Nothing is imported here so that importing the package stays cheap.
"""
