"""Rules the product documentation states (PAI Designer custom components, PAI DLC, ModelArts
training jobs, the Octopus training-task service) that relate fields to each other, or a run to its
component.

Each rule reads the structurally-checked raw document defensively (a structure error elsewhere
must not crash a rule) and returns diagnostics; all of them are reported together.
"""
