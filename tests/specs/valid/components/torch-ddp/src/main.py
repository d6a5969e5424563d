print("torch-ddp fixture")
