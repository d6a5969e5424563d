"""census-tf: wide-and-deep binary classifier trained with tf.distribute.ParameterServerStrategy.

Roles come from TF_CONFIG (KubeDL sets it): `ps` and `worker` replicas run a tf.distribute.Server
and wait; the `chief` is the coordinator that builds the model under the strategy and drives
training. Checkpoints go to --checkpoints (preloaded on restart), the SavedModel to --model.
"""

from __future__ import annotations

import argparse
import glob
import json
import os

import tensorflow as tf


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--steps-per-epoch", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--learning-rate", type=float, default=0.001)
    p.add_argument("--hidden-units", default="128,64")
    p.add_argument("--label", default="label")
    for channel in ("--train", "--eval", "--model", "--checkpoints"):
        p.add_argument(channel, default="")
    return p.parse_known_args()[0]


def csv_files(channel: str) -> list[str]:
    """A channel is a directory (all *.csv in it) or, when bound to a file, that file."""
    return [channel] if os.path.isfile(channel) else sorted(
        glob.glob(os.path.join(channel, "**", "*.csv"), recursive=True))


def dataset(files: list[str], args: argparse.Namespace, repeat: bool) -> tf.data.Dataset:
    ds = tf.data.experimental.make_csv_dataset(
        files, batch_size=args.batch_size, label_name=args.label, num_epochs=None if repeat else 1,
        shuffle=repeat)
    return ds.map(lambda features, label: (tf.stack(list(features.values()), axis=1), label))


def build_model(n_features: int, args: argparse.Namespace) -> tf.keras.Model:
    inputs = tf.keras.Input(shape=(n_features,))
    deep = inputs
    for units in (int(u) for u in args.hidden_units.split(",") if u):
        deep = tf.keras.layers.Dense(units, activation="relu")(deep)
    wide_and_deep = tf.keras.layers.concatenate([inputs, deep])
    outputs = tf.keras.layers.Dense(1, activation="sigmoid")(wide_and_deep)
    model = tf.keras.Model(inputs, outputs)
    model.compile(optimizer=tf.keras.optimizers.Adam(args.learning_rate),
                  loss="binary_crossentropy", metrics=["accuracy"], steps_per_execution=10)
    return model


def main() -> None:
    args = parse_args()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                      task_index=resolver.task_id, protocol="grpc", start=True)
        server.join()  # until the job ends; the chief's exit completes the TFJob
        return
    train_files = csv_files(args.train)
    if not train_files:
        raise SystemExit(f"no CSV files under --train {args.train!r}")
    with open(train_files[0]) as fh:
        n_features = len(fh.readline().strip().split(",")) - 1
    strategy = (tf.distribute.ParameterServerStrategy(resolver) if "TF_CONFIG" in os.environ
                else tf.distribute.get_strategy())  # a single process: no cluster
    with strategy.scope():
        model = build_model(n_features, args)
    callbacks = []
    if args.checkpoints:  # preloaded before start: a restarted job continues from here
        checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
        manager = tf.train.CheckpointManager(checkpoint, args.checkpoints, max_to_keep=3)
        if manager.latest_checkpoint:
            checkpoint.restore(manager.latest_checkpoint)
            print(f"resumed from {manager.latest_checkpoint}", flush=True)
        callbacks.append(tf.keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: manager.save()))
    history = model.fit(
        tf.keras.utils.experimental.DatasetCreator(
            lambda ctx: dataset(train_files, args, repeat=True)),
        epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, callbacks=callbacks)
    if args.eval and csv_files(args.eval):
        print("eval:", model.evaluate(dataset(csv_files(args.eval), args, repeat=False),
                                      return_dict=True), flush=True)
    if args.model:
        model.save(os.path.join(args.model, "saved_model"))
    metrics = os.environ.get("METRICS")
    if metrics:
        os.makedirs(metrics, exist_ok=True)
        with open(os.path.join(metrics, "metrics.json"), "w") as fh:
            json.dump({"id": os.environ.get("JOB_NAME", ""), "metas": [
                {"name": "loss", "x": "epoch", "ys": ["loss", "accuracy"],
                 "description": "training loss and accuracy", "smooth": "false",
                 "with_timestamp": "false"}]}, fh, indent=2)
        with open(os.path.join(metrics, "loss.csv"), "w") as fh:
            fh.write("epoch,loss,accuracy\n")
            for i, (loss, acc) in enumerate(zip(history.history["loss"],
                                                history.history["accuracy"], strict=True)):
                fh.write(f"{i + 1},{loss},{acc}\n")


if __name__ == "__main__":
    main()
