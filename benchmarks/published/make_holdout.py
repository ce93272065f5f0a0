"""How benchmarks/published/holdout.json was made: published 1-GPU vs N-GPU throughputs
that were not used to build or fit rung's scaling model (see README.md beside this file).

Two sources:
- NVIDIA DeepLearningExamples READMEs at commit 729963dd (the table values below are
  transcribed from them by hand; each row names its README and table);
- Lambda's TensorFlow benchmark raw logs at commit e086e0e7, read from a local clone
  ('total images/sec' of the 1-GPU and 8-GPU runs, and TF's peer-to-peer edge matrix).

    python benchmarks/published/make_holdout.py LAMBDA_CLONE OUT.json

LAMBDA_CLONE: a git clone of github.com/LambdaColdStorage/lambda-tensorflow-benchmark
(any checkout; the files are read at commit e086e0e7 with `git show`).
"""
import json
import subprocess
import sys
COMMIT = "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"
SYS = {
    "DGX-1 16G": dict(device="V100-SXM2-16GB", system="DGX-1", gpus_per_host=8,
                      intra_host_link="nvlink (hybrid cube-mesh, NVLink2)"),
    "DGX-1 32G": dict(device="V100-SXM2-32GB", system="DGX-1", gpus_per_host=8,
                      intra_host_link="nvlink (hybrid cube-mesh, NVLink2)"),
    "DGX-2": dict(device="V100-SXM3-32GB", system="DGX-2", gpus_per_host=16,
                  intra_host_link="nvlink (NVSwitch, 300 GB/s/GPU)"),
    "DGX A100 40G": dict(device="A100-SXM4-40GB", system="DGX A100", gpus_per_host=8,
                         intra_host_link="nvlink (NVSwitch, 600 GB/s/GPU)"),
    "DGX A100 80G": dict(device="A100-SXM4-80GB", system="DGX A100", gpus_per_host=8,
                         intra_host_link="nvlink (NVSwitch, 600 GB/s/GPU)"),
}
NET = {
    "DGX A100": (1600, "InfiniBand HDR, 8x200 Gb/s per DGX A100 (compute fabric)",
                 "DGX A100 system spec (8x ConnectX-6 200 Gb/s HDR IB); not stated in the README (as the shared file's V01)"),
    "DGX-2H": (800, "InfiniBand EDR, 8x100 Gb/s per DGX-2/2H",
               "DGX-2 system spec (eight 100 Gb/s EDR ports); not stated in the README (as the shared file's X02)"),
}
MODELS = {
    "rn50": ("ResNet-50 v1.5 ImageNet", 25.6, "keras.io/api/applications table: ResNet50 25.6M (v1.5 only moves a stride)", False,
             "TF1 + Horovod (NCCL), DALI", "SGD momentum 0.875", "TensorFlow/Classification/ConvNets/resnet50v1.5/README.md"),
    "rnx": ("ResNeXt-101 32x4d ImageNet", 44.2, "timm resnext101_32x4d.gluon_in1k model card: Params (M) 44.2", False,
            "TF1 + Horovod (NCCL), DALI", "SGD momentum 0.875", "TensorFlow/Classification/ConvNets/resnext101-32x4d/README.md"),
    "senx": ("SE-ResNeXt-101 32x4d ImageNet", 48.9,
             "computed: ResNeXt-101 32x4d 44.2M + squeeze-excitation 2*C^2/16 per block (3x256, 4x512, 23x1024, 3x2048 channels) = 4.7M",
             True, "TF1 + Horovod (NCCL), DALI", "SGD momentum 0.875",
             "TensorFlow/Classification/ConvNets/se-resnext101-32x4d/README.md"),
    "bert1-pt128": ("BERT-large pre-training phase 1 (seq 128)", 340, "Devlin et al. 2019 (arXiv:1810.04805): BERT-LARGE 340M", False,
                    "TF1 + Horovod (NCCL)", "LAMB", "TensorFlow/LanguageModeling/BERT/README.md"),
    "bert1-pt512": ("BERT-large pre-training phase 2 (seq 512)", 340, "Devlin et al. 2019 (arXiv:1810.04805): BERT-LARGE 340M", False,
                    "TF1 + Horovod (NCCL)", "LAMB", "TensorFlow/LanguageModeling/BERT/README.md"),
    "bert1-sq": ("BERT-large fine-tuning SQuAD v1.1 (seq 384)", 340, "Devlin et al. 2019 (arXiv:1810.04805): BERT-LARGE 340M", False,
                 "TF1 + Horovod (NCCL)", "Adam (BERT AdamWeightDecay)", "TensorFlow/LanguageModeling/BERT/README.md"),
    "bert2-pt128": ("BERT-large pre-training phase 1 (seq 128), TF2", 340, "Devlin et al. 2019 (arXiv:1810.04805): BERT-LARGE 340M", False,
                    "TF2 + Horovod (NCCL)", "LAMB", "TensorFlow2/LanguageModeling/BERT/README.md"),
    "bert2-pt512": ("BERT-large pre-training phase 2 (seq 512), TF2", 340, "Devlin et al. 2019 (arXiv:1810.04805): BERT-LARGE 340M", False,
                    "TF2 + Horovod (NCCL)", "LAMB", "TensorFlow2/LanguageModeling/BERT/README.md"),
    "bert2-sq": ("BERT-large fine-tuning SQuAD v1.1 (seq 384), TF2", 340, "Devlin et al. 2019 (arXiv:1810.04805): BERT-LARGE 340M", False,
                 "TF2 + Horovod (NCCL)", "Adam", "TensorFlow2/LanguageModeling/BERT/README.md"),
    "el-pt128": ("ELECTRA-base pre-training phase 1 (seq 128)", 110,
                 "DLE ELECTRA README 'Model architecture': ELECTRA_BASE 110M (the discriminator; the smaller generator trained beside it is not counted)",
                 True, "TF2 + Horovod (NCCL)", "LAMB", "TensorFlow2/LanguageModeling/ELECTRA/README.md"),
    "el-pt512": ("ELECTRA-base pre-training phase 2 (seq 512)", 110,
                 "DLE ELECTRA README 'Model architecture': ELECTRA_BASE 110M (the discriminator; the smaller generator trained beside it is not counted)",
                 True, "TF2 + Horovod (NCCL)", "LAMB", "TensorFlow2/LanguageModeling/ELECTRA/README.md"),
    "el-sq": ("ELECTRA-base fine-tuning SQuAD (seq 384)", 110, "DLE ELECTRA README 'Model architecture': ELECTRA_BASE 110M", False,
              "TF2 + Horovod (NCCL)", "AdamW (AdamWeightDecay, optimization.py)", "TensorFlow2/LanguageModeling/ELECTRA/README.md"),
    "unet3d": ("3D U-Net (BraTS volumes)", 19.1,
               "Cicek et al. 2016 (arXiv:1606.06650): 19,069,955 parameters; DLE's variant assumed equal",
               True, "TF1 + Horovod (NCCL)", "Adam", "TensorFlow/Segmentation/UNet_3D_Medical/README.md"),
    "unet1": ("U-Net (2D, medical EM segmentation)", 34.5,
              "as the shared file's V20: computed from DLE UNet_Medical model code (64..1024 filters)", True,
              "TF1 + Horovod (NCCL)", "Adam", "TensorFlow/Segmentation/UNet_Medical/README.md"),
    "unet2": ("U-Net (2D, medical EM segmentation), TF2", 34.5,
              "as the shared file's V20: computed from DLE UNet_Medical model code (64..1024 filters)", True,
              "TF2 + Horovod (NCCL)", "Adam", "TensorFlow2/Segmentation/UNet_Medical/README.md"),
    "mrcnn": ("Mask R-CNN ResNet-50-FPN COCO", 44.4,
              "as the shared file's V19: torchvision maskrcnn_resnet50_fpn 44,401,393; DLE TF2 assumed equivalent", True,
              "TF2 tf.distribute.MirroredStrategy (mrcnn_tf2/runtime/run.py)", "SGD momentum",
              "TensorFlow2/Segmentation/MaskRCNN/README.md"),
    "ssd": ("SSD320 v1.2 (ResNet-50 v1 + FPN, focal loss) COCO", 37.0,
            "as the shared file's X10: rough estimate (ResNet-50 v1 + FPN + box/class towers)", True,
            "TF1 (TF object detection API) + Horovod", "SGD momentum 0.9", "TensorFlow/Detection/SSD/README.md"),
    "txl": ("Transformer-XL base (16L, d512) WikiText-103", 191.7,
            "as the shared file's X09: computed from DLE run_wt103_base.sh (embedding 137.1M + layers 54.6M)", True,
            "TF1 + Horovod (NCCL)", "LAMB", "TensorFlow/LanguageModeling/Transformer-XL/README.md"),
    "edet": ("EfficientDet-D0 COCO", 3.9, "Tan, Pang & Le 2020 (arXiv:1911.09070) Table 2: EfficientDet-D0 3.9M", False,
             "TF2 + Horovod (NCCL)", "SGD momentum 0.93", "TensorFlow2/Detection/Efficientdet/README.md"),
}
TOKENS_PER_SEQUENCE = {"txl": 192}   # Transformer-XL base: tgt_len 192 (run_wt103_base.sh)
# (model, system, precision, per-GPU batch, accumulation at 1 GPU, accumulation at N, N GPUs, hosts,
#  1-GPU throughput, N-GPU throughput, section, notes)
R = [
 ("rn50", "DGX A100 40G", "TF32 + XLA", 256, None, None, 8, 1, 909, 7000, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("rn50", "DGX A100 40G", "AMP (FP16 mixed) + XLA", 256, None, None, 8, 1, 2375, 17400, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("rn50", "DGX-1 16G", "FP32 + XLA", 128, None, None, 8, 1, 412, 3170, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("rn50", "DGX-1 16G", "AMP (FP16 mixed) + XLA", 256, None, None, 8, 1, 1270, 9510, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("rn50", "DGX-2", "AMP (FP16 mixed) + XLA", 256, None, None, 16, 1, 1300, 17250, "Training performance: NVIDIA DGX-2 (16x V100 32G)", "AMP twin of the shared file's X07."),
 ("rnx", "DGX A100 40G", "TF32 + XLA", 128, None, None, 8, 1, 371, 2854, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("rnx", "DGX A100 40G", "AMP (FP16 mixed) + XLA", 256, None, None, 8, 1, 1132, 8500, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("rnx", "DGX-1 16G", "FP32", 64, None, None, 8, 1, 166, 1210, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("rnx", "DGX-1 16G", "AMP (FP16 mixed)", 128, None, None, 8, 1, 566, 4160, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("rnx", "DGX-2", "FP32", 64, None, None, 16, 1, 170, 2500, "Training performance: NVIDIA DGX-2 (16x V100 32G)", ""),
 ("rnx", "DGX-2", "AMP (FP16 mixed)", 128, None, None, 16, 1, 572, 7750, "Training performance: NVIDIA DGX-2 (16x V100 32G)", ""),
 ("senx", "DGX A100 40G", "TF32 + XLA", 128, None, None, 8, 1, 342, 2610, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("senx", "DGX A100 40G", "AMP (FP16 mixed) + XLA", 256, None, None, 8, 1, 975, 7230, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("senx", "DGX-1 16G", "FP32 + XLA", 64, None, None, 8, 1, 152, 1120, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("senx", "DGX-1 16G", "AMP (FP16 mixed) + XLA", 96, None, None, 8, 1, 475, 3360, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("senx", "DGX-2", "FP32 + XLA", 64, None, None, 16, 1, 158, 2270, "Training performance: NVIDIA DGX-2 (16x V100 32G)", ""),
 ("senx", "DGX-2", "AMP (FP16 mixed) + XLA", 96, None, None, 16, 1, 472, 6580, "Training performance: NVIDIA DGX-2 (16x V100 32G)", ""),
 # BERT TF1, pre-training, single node
 ("bert1-pt128", "DGX-1 16G", "AMP (FP16 mixed)", 16, 4096, 512, 8, 1, 134.34, 1001.39, "Pre-training training performance: single-node on DGX-1 16GB", ""),
 ("bert1-pt128", "DGX-1 16G", "FP32", 8, 8192, 1024, 8, 1, 39.43, 285.79, "Pre-training training performance: single-node on DGX-1 16GB", ""),
 ("bert1-pt512", "DGX-1 16G", "AMP (FP16 mixed)", 4, 8192, 1024, 8, 1, 28.72, 190.65, "Pre-training training performance: single-node on DGX-1 16GB", ""),
 ("bert1-pt512", "DGX-1 16G", "FP32", 2, 16384, 2048, 8, 1, 9.80, 69.53, "Pre-training training performance: single-node on DGX-1 16GB", ""),
 ("bert1-pt128", "DGX-1 32G", "AMP (FP16 mixed)", 64, 1024, 128, 8, 1, 168.63, 1443.05, "Pre-training training performance: single-node on DGX-1 32GB", "Super-linear in the source (8.56x on 8 GPUs)."),
 ("bert1-pt128", "DGX-1 32G", "FP32", 32, 2048, 256, 8, 1, 46.78, 357.00, "Pre-training training performance: single-node on DGX-1 32GB", ""),
 ("bert1-pt512", "DGX-1 32G", "AMP (FP16 mixed)", 8, 4096, 512, 8, 1, 31.23, 255.64, "Pre-training training performance: single-node on DGX-1 32GB", "Super-linear in the source (8.19x on 8 GPUs)."),
 ("bert1-pt512", "DGX-1 32G", "FP32", 8, 4096, 512, 8, 1, 10.67, 81.42, "Pre-training training performance: single-node on DGX-1 32GB", ""),
 ("bert1-pt128", "DGX-2", "AMP (FP16 mixed)", 64, 1024, 64, 16, 1, 188.04, 3081.69, "Pre-training training performance: single-node on DGX-2 32GB", "Super-linear in the source (16.39x on 16 GPUs)."),
 ("bert1-pt512", "DGX-2", "AMP (FP16 mixed)", 8, 4096, 256, 16, 1, 35.32, 513.43, "Pre-training training performance: single-node on DGX-2 32GB", ""),
 ("bert1-pt512", "DGX-2", "FP32", 8, 4096, 256, 16, 1, 11.67, 173.26, "Pre-training training performance: single-node on DGX-2 32GB", ""),
 ("bert1-pt128", "DGX A100 40G", "TF32", 64, 1024, 128, 8, 1, 238.10, 1889.71, "Pre-training training performance: single-node on DGX A100 40GB", ""),
 ("bert1-pt512", "DGX A100 40G", "AMP (FP16 mixed)", 16, 2048, 256, 8, 1, 70.856, 572.112, "Pre-training training performance: single-node on DGX A100 40GB", ""),
 ("bert1-pt512", "DGX A100 40G", "TF32", 8, 4096, 512, 8, 1, 39.96, 316.51, "Pre-training training performance: single-node on DGX A100 40GB", ""),
 ("bert1-pt512", "DGX-2", "FP32", 8, 4096, 8, 512, 32, 11.67, 5893.14, "Pre-training training performance: multi-node on DGX-2H 32GB (N-GPU); single-node on DGX-2 32GB (1-GPU)",
  "WEAK JOIN, as the shared file's X02: the multi-node run is DGX-2H, the 1-GPU run DGX-2; the multi-node table's 1-node row (173.26) equals the DGX-2 single-node 16-GPU row."),
 # BERT TF1, fine-tuning SQuAD
 ("bert1-sq", "DGX-1 16G", "AMP (FP16 mixed)", 4, None, None, 8, 1, 29.74, 189.77, "Fine-tuning training performance for SQuAD v1.1 on DGX-1 16GB", ""),
 ("bert1-sq", "DGX-1 16G", "FP32", 2, None, None, 8, 1, 7.36, 52.39, "Fine-tuning training performance for SQuAD v1.1 on DGX-1 16GB", ""),
 ("bert1-sq", "DGX-1 32G", "AMP (FP16 mixed)", 24, None, None, 8, 1, 51.02, 314.6, "Fine-tuning training performance for SQuAD v1.1 on DGX-1 32GB", ""),
 ("bert1-sq", "DGX-1 32G", "FP32", 10, None, None, 8, 1, 10.42, 79.37, "Fine-tuning training performance for SQuAD v1.1 on DGX-1 32GB", ""),
 ("bert1-sq", "DGX-2", "FP32", 10, None, None, 16, 1, 11.15, 156.29, "Fine-tuning training performance for SQuAD v1.1 on DGX-2 32GB", "FP32 twin of the shared file's V15."),
 ("bert1-sq", "DGX A100 40G", "AMP (FP16 mixed)", 32, None, None, 8, 1, 102.26, 767.071, "Fine-tuning training performance for SQuAD v1.1 on DGX A100 40GB", ""),
 ("bert1-sq", "DGX A100 40G", "TF32", 16, None, None, 8, 1, 61.364, 440.47, "Fine-tuning training performance for SQuAD v1.1 on DGX A100 40GB", ""),
 # BERT TF2
 ("bert2-pt128", "DGX-2", "AMP (FP16 mixed)", 60, 1024, 64, 16, 1, 206.5, 3077.99, "Pre-training training performance: Single-node on NVIDIA DGX-2 V100 (16x V100 32GB)", ""),
 ("bert2-pt128", "DGX-2", "FP32", 32, 2048, 128, 16, 1, 49.97, 762.22, "Pre-training training performance: Single-node on NVIDIA DGX-2 V100 (16x V100 32GB)", ""),
 ("bert2-pt512", "DGX-2", "AMP (FP16 mixed)", 10, 3072, 192, 16, 1, 40.95, 614.94, "Pre-training training performance: Single-node on NVIDIA DGX-2 V100 (16x V100 32GB)", ""),
 ("bert2-pt128", "DGX A100 80G", "AMP (FP16 mixed)", 312, 256, 32, 8, 1, 485.59, 3799.24, "Pre-training training performance: Single-node on NVIDIA DGX A100 (8x A100 80GB)", ""),
 ("bert2-pt128", "DGX A100 80G", "TF32", 176, 512, 64, 8, 1, 282.98, 1944.77, "Pre-training training performance: Single-node on NVIDIA DGX A100 (8x A100 80GB)", ""),
 ("bert2-pt512", "DGX A100 80G", "AMP (FP16 mixed)", 40, 768, 96, 8, 1, 96.52, 649.69, "Pre-training training performance: Single-node on NVIDIA DGX A100 (8x A100 80GB)", ""),
 ("bert2-pt512", "DGX A100 80G", "TF32", 22, 1536, 192, 8, 1, 54.92, 427.39, "Pre-training training performance: Single-node on NVIDIA DGX A100 (8x A100 80GB)", ""),
 ("bert2-pt128", "DGX A100 80G", "AMP (FP16 mixed)", 312, 256, 1, 256, 32, 485.59, 110280.73, "Pre-training training performance: Multi-node on NVIDIA DGX A100 (8x A100 80GB) (N-GPU); Single-node (1-GPU)",
  "The multi-node table's 1-node row (3803.82) is within 0.2% of the single-node 8-GPU row (3799.24)."),
 ("bert2-pt512", "DGX A100 80G", "TF32", 22, 1536, 6, 256, 32, 54.92, 11240.5, "Pre-training training performance: Multi-node on NVIDIA DGX A100 (8x A100 80GB) (N-GPU); Single-node (1-GPU)",
  "The multi-node table's 1-node row (431.89) is within 1.1% of the single-node 8-GPU row (427.39)."),
 ("bert2-sq", "DGX-1 16G", "AMP (FP16 mixed)", 6, None, None, 8, 1, 39.10, 255.36, "Fine-tuning training performance for SQuAD v1.1 on NVIDIA DGX-1 V100 (8x V100 16GB)", ""),
 ("bert2-sq", "DGX-1 16G", "FP32", 3, None, None, 8, 1, 9.85, 73.03, "Fine-tuning training performance for SQuAD v1.1 on NVIDIA DGX-1 V100 (8x V100 16GB)", ""),
 ("bert2-sq", "DGX-1 32G", "AMP (FP16 mixed)", 12, None, None, 8, 1, 47.06, 330.29, "Fine-tuning training performance for SQuAD v1.1 on NVIDIA DGX-1 V100 (8x V100 32GB)", ""),
 ("bert2-sq", "DGX-1 32G", "FP32", 8, None, None, 8, 1, 11.11, 85.91, "Fine-tuning training performance for SQuAD v1.1 on NVIDIA DGX-1 V100 (8x V100 32GB)", ""),
 ("bert2-sq", "DGX A100 80G", "AMP (FP16 mixed)", 76, None, None, 8, 1, 134.22, 1048.23, "Fine-tuning training performance for SQuAD v1.1 on NVIDIA DGX A100 (8x A100 80GB)", ""),
 ("bert2-sq", "DGX A100 80G", "TF32", 38, None, None, 8, 1, 43.9, 341.31, "Fine-tuning training performance for SQuAD v1.1 on NVIDIA DGX A100 (8x A100 80GB)", ""),
 # ELECTRA TF2
 ("el-pt128", "DGX A100 40G", "TF32", 88, 768, 96, 8, 1, 533, 4202, "Pre-training NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("el-pt128", "DGX A100 40G", "AMP (FP16 mixed)", 176, 384, 48, 8, 1, 955, 7512, "Pre-training NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("el-pt512", "DGX A100 40G", "TF32", 12, 2304, 288, 8, 1, 90, 716, "Pre-training NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("el-pt512", "DGX A100 40G", "AMP (FP16 mixed)", 24, 1152, 144, 8, 1, 171, 1347, "Pre-training NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("el-pt128", "DGX-1 16G", "FP32", 40, 1689, 211, 8, 1, 116, 920, "Pre-training NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("el-pt128", "DGX-1 16G", "AMP (FP16 mixed)", 88, 768, 96, 8, 1, 444, 3475, "Pre-training NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("el-pt512", "DGX-1 16G", "FP32", 6, 4608, 576, 8, 1, 24, 190, "Pre-training NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("el-pt512", "DGX-1 16G", "AMP (FP16 mixed)", 12, 2304, 288, 8, 1, 84, 656, "Pre-training NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("el-pt128", "DGX-2", "FP32", 88, 768, 48, 16, 1, 128, 2018, "Pre-training NVIDIA DGX-2 (16x V100 32GB)", ""),
 ("el-pt128", "DGX-2", "AMP (FP16 mixed)", 176, 384, 24, 16, 1, 500, 7773, "Pre-training NVIDIA DGX-2 (16x V100 32GB)", ""),
 ("el-pt512", "DGX-2", "FP32", 12, 2304, 144, 16, 1, 27, 426, "Pre-training NVIDIA DGX-2 (16x V100 32GB)", ""),
 ("el-pt512", "DGX-2", "AMP (FP16 mixed)", 24, 1152, 72, 16, 1, 96, 1506, "Pre-training NVIDIA DGX-2 (16x V100 32GB)", ""),
 ("el-sq", "DGX A100 40G", "TF32", 32, None, None, 8, 1, 107, 828, "Fine-tuning NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("el-sq", "DGX A100 40G", "AMP (FP16 mixed)", 32, None, None, 8, 1, 317, 2221, "Fine-tuning NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("el-sq", "DGX-1 16G", "FP32", 8, None, None, 8, 1, 35, 268, "Fine-tuning NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("el-sq", "DGX-1 16G", "AMP (FP16 mixed)", 16, None, None, 8, 1, 154, 1051, "Fine-tuning NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("el-sq", "DGX-2", "FP32", 16, None, None, 16, 1, 40, 626, "Fine-tuning NVIDIA DGX-2 (16x V100 32GB)", "FP32 twin of the shared file's V17."),
 # Segmentation, detection and Transformer-XL tables: each precision, each per-GPU batch at 1 GPU and the full host
 ("unet3d", "DGX A100 80G", "TF32", 2, None, None, 8, 1, 10.40, 81.71, "Training performance: NVIDIA DGX A100 (8x A100 80G)", ""),
 ("unet3d", "DGX A100 80G", "TF32", 4, None, None, 8, 1, 10.66, 80.65, "Training performance: NVIDIA DGX A100 (8x A100 80G)", ""),
 ("unet3d", "DGX A100 80G", "TF32", 8, None, None, 8, 1, 3.99, 29.79, "Training performance: NVIDIA DGX A100 (8x A100 80G)", "The 1-GPU rate at batch 8 is a third of batch 4's in the source."),
 ("unet3d", "DGX A100 80G", "AMP (FP16 mixed)", 2, None, None, 8, 1, 17.91, 100.24, "Training performance: NVIDIA DGX A100 (8x A100 80G)", ""),
 ("unet3d", "DGX A100 80G", "AMP (FP16 mixed)", 4, None, None, 8, 1, 19.88, 140.44, "Training performance: NVIDIA DGX A100 (8x A100 80G)", ""),
 ("unet3d", "DGX A100 80G", "AMP (FP16 mixed)", 8, None, None, 8, 1, 20.89, 137.61, "Training performance: NVIDIA DGX A100 (8x A100 80G)", ""),
 ("unet3d", "DGX-1 16G", "FP32", 1, None, None, 8, 1, 1.87, 14.49, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("unet3d", "DGX-1 16G", "FP32", 2, None, None, 8, 1, 2.32, 18.06, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("unet3d", "DGX-1 16G", "AMP (FP16 mixed)", 1, None, None, 8, 1, 7.45, 46.88, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("unet3d", "DGX-1 16G", "AMP (FP16 mixed)", 2, None, None, 8, 1, 8.79, 58.30, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("unet1", "DGX A100 40G", "TF32", 1, None, None, 8, 1, 29.81, 169.62, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("unet1", "DGX A100 40G", "TF32", 8, None, None, 8, 1, 40.50, 304.64, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("unet1", "DGX A100 40G", "AMP (FP16 mixed)", 1, None, None, 8, 1, 64.22, 293.31, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("unet1", "DGX A100 40G", "AMP (FP16 mixed)", 8, None, None, 8, 1, 120.08, 738.64, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", ""),
 ("unet1", "DGX-1 16G", "FP32", 1, None, None, 8, 1, 15.70, 102.52, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("unet1", "DGX-1 16G", "FP32", 8, None, None, 8, 1, 18.85, 141.75, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("unet1", "DGX-1 16G", "AMP (FP16 mixed)", 1, None, None, 8, 1, 39.62, 212.51, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("unet1", "DGX-1 16G", "AMP (FP16 mixed)", 8, None, None, 8, 1, 60.28, 403.88, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("unet2", "DGX A100 80G", "TF32", 1, None, None, 8, 1, 46.88, 298.91, "Training performance: NVIDIA DGX A100 (8x A100 80G)", ""),
 ("unet2", "DGX A100 80G", "TF32", 8, None, None, 8, 1, 63.33, 470.50, "Training performance: NVIDIA DGX A100 (8x A100 80G)", ""),
 ("unet2", "DGX A100 80G", "AMP (FP16 mixed)", 1, None, None, 8, 1, 75.04, 384.27, "Training performance: NVIDIA DGX A100 (8x A100 80G)", "Batch-1 twin of the shared file's V20."),
 ("unet2", "DGX-1 16G", "FP32", 1, None, None, 8, 1, 16.92, 120.90, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("unet2", "DGX-1 16G", "FP32", 8, None, None, 8, 1, 19.40, 137.11, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("unet2", "DGX-1 16G", "AMP (FP16 mixed)", 1, None, None, 8, 1, 39.63, 225.27, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("unet2", "DGX-1 16G", "AMP (FP16 mixed)", 8, None, None, 8, 1, 60.65, 419.99, "Training performance: NVIDIA DGX-1 (8x V100 16G)", ""),
 ("mrcnn", "DGX A100 80G", "TF32", 2, None, None, 8, 1, 13.44, 84.29, "Training performance: NVIDIA DGX A100 (8x A100 80GB)", ""),
 ("mrcnn", "DGX A100 80G", "TF32", 4, None, None, 8, 1, 18.41, 103.80, "Training performance: NVIDIA DGX A100 (8x A100 80GB)", ""),
 ("mrcnn", "DGX A100 80G", "AMP (FP16 mixed)", 2, None, None, 8, 1, 18.26, 87.31, "Training performance: NVIDIA DGX A100 (8x A100 80GB)", "Batch-2 twin of the shared file's V19."),
 ("mrcnn", "DGX-1 16G", "FP32", 2, None, None, 8, 1, 7.57, 44.55, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("mrcnn", "DGX-1 16G", "FP32", 4, None, None, 8, 1, 8.51, 50.56, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("mrcnn", "DGX-1 16G", "AMP (FP16 mixed)", 2, None, None, 8, 1, 14.47, 53.40, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("mrcnn", "DGX-1 16G", "AMP (FP16 mixed)", 4, None, None, 8, 1, 19.35, 58.33, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("ssd", "DGX A100 40G", "TF32", 32, None, None, 8, 1, 123.48, 779.96, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", "TF32 twin of the shared file's X10."),
 ("ssd", "DGX-1 16G", "AMP (FP16 mixed)", 32, None, None, 8, 1, 127.96, 676.83, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("ssd", "DGX-1 16G", "FP32", 32, None, None, 8, 1, 84.96, 501.30, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", ""),
 ("txl", "DGX A100 40G", "AMP (FP16 mixed)", 16, None, None, 8, 1, 26130, 155656, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", "Throughputs in tokens/s; 192 tokens a sequence."),
 ("txl", "DGX A100 40G", "TF32", 32, None, None, 8, 1, 30958, 224474, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", "Throughputs in tokens/s; 192 tokens a sequence."),
 ("txl", "DGX A100 40G", "AMP (FP16 mixed)", 32, None, None, 8, 1, 33117, 227502, "Training performance: NVIDIA DGX A100 (8x A100 40GB)", "Throughputs in tokens/s; 192 tokens a sequence."),
 ("txl", "DGX-1 16G", "FP32", 16, None, None, 8, 1, 9104, 78626, "Training performance: NVIDIA DGX-1 (8x V100 16GB), Base model", "Throughputs in tokens/s; 192 tokens a sequence. Super-linear in the source (8.64x)."),
 ("txl", "DGX-1 16G", "AMP (FP16 mixed)", 16, None, None, 8, 1, 13004, 101954, "Training performance: NVIDIA DGX-1 (8x V100 16GB), Base model", "Throughputs in tokens/s; 192 tokens a sequence."),
 ("edet", "DGX A100 80G", "TF32", 104, None, None, 8, 1, 162, 1266, "Training performance: NVIDIA DGX A100 (8x A100 80GB)", "Per-GPU batch from the table header (BS=104) and scripts/D0/training-benchmark-TF32-A100-80G.sh (bs=104, one process per GPU). The README notes the data loader is a bottleneck for this model."),
 ("edet", "DGX A100 80G", "AMP (FP16 mixed)", 200, None, None, 8, 1, 397, 2711, "Training performance: NVIDIA DGX A100 (8x A100 80GB)", "Per-GPU batch from the table header (BS=200). The README notes the data loader is a bottleneck for this model."),
 ("edet", "DGX-1 32G", "FP32", 40, None, None, 8, 1, 113, 645, "Training performance: NVIDIA DGX-1 (8x V100 32GB)", "Per-GPU batch from the table header (BS=40). The README notes the data loader is a bottleneck for this model."),
 ("edet", "DGX-1 32G", "AMP (FP16 mixed)", 64, None, None, 8, 1, 232, 777, "Training performance: NVIDIA DGX-1 (8x V100 32GB)", "Per-GPU batch from the table header (BS=64). The README notes the data loader is a bottleneck for this model."),
 ("txl", "DGX-2", "FP32", 16, None, None, 16, 1, 9891, 164675, "Training performance: NVIDIA DGX-2 (16x V100 32GB), Base model", "Throughputs in tokens/s; 192 tokens a sequence. Super-linear in the source (16.65x)."),
]
out = []
for i, (m, sysname, prec, b, a1, an, n, hosts, t1, tn, section, notes) in enumerate(R, 1):
    name, params, psrc, pinf, fw, opt, path = MODELS[m]
    s = dict(SYS[sysname])
    unit = ("images/s" if m in ("rn50", "rnx", "senx", "unet3d", "unet1", "unet2", "mrcnn", "ssd", "edet")
            else "tokens/s" if m in TOKENS_PER_SEQUENCE else "sequences/s")
    per_example = TOKENS_PER_SEQUENCE.get(m, 1)
    batch = f"{b} (x tgt_len {per_example} tokens)" if per_example > 1 else b
    row = {"id": f"H{i:02d}", "priority": "holdout", "model": name, "params_M": params, "params_source": psrc,
           "params_inferred": pinf, "framework": fw, "precision": prec, "optimizer": opt, "per_gpu_batch": batch,
           "grad_accum": None if a1 is None else f"{a1} @1 GPU; {an} @{n} GPUs",
           **s, "hosts": hosts, "n_gpus": n, "throughput_unit": unit, "throughput_1gpu": t1, "throughput_ngpu": tn,
           "efficiency": round(tn / (n * t1), 4), "step_time_1gpu_s_computed": round(b * per_example / t1, 4),
           "per_gpu_batch_inferred": False,
           "source": {"repo": "NVIDIA/DeepLearningExamples", "path": path, "commit": COMMIT, "section": section,
                      "url": f"https://github.com/NVIDIA/DeepLearningExamples/blob/{COMMIT}/{path}"},
           "notes": notes}
    if a1 is not None:
        assert abs(b * a1 - b * an * n) / (b * a1) < 0.01 or hosts > 1, row["id"]
    if hosts > 1:
        key = "DGX-2H" if "DGX-2H" in section else "DGX A100"
        gbps, net, src = NET[key]
        row.update(inter_host_gbps_per_host=gbps, inter_host_network=net, inter_host_inferred=True, inter_host_source=src)
        if key == "DGX-2H":
            row["system"] = "DGX-2H (N-GPU) / DGX-2 (1-GPU)"
    else:
        row.update(inter_host_gbps_per_host=None, inter_host_network="n/a (single host)", inter_host_inferred=False,
                   inter_host_source=None)
    out.append(row)

# --- Lambda's TensorFlow benchmark (raw logs behind the CSVs of lambdalabs.com/gpu-benchmarks), PCIe with P2P ---
LREPO = sys.argv[1]
LCOMMIT = "e086e0e7d88a19991642d0774793693d4b7cbe46"
LSYS = {
    "7502-A100-PCIE-40GB": ("A100-PCIE-40GB", "Lambda 8-GPU server, AMD EPYC 7502", "pcie (Gen4, P2P enabled)",
                            "TF 1.15.4 (nvidia build) tf_cnn_benchmarks"),
    "7502-RTX_A6000_XLA_TF1_15": ("RTX A6000 (48GB)", "Lambda 8-GPU server, AMD EPYC 7502", "pcie (Gen4, P2P enabled)",
                                  "TF 1.15 tf_cnn_benchmarks (XLA)"),
    "Gold_6230-Quadro_RTX_8000_XLA_trt_TF1_15": ("Quadro RTX 8000 (48GB)", "Lambda 8-GPU server, Xeon Gold 6230",
                                                 "pcie (Gen3, P2P enabled)", "TF 1.15 tf_cnn_benchmarks (XLA)"),
}
LMODELS = {
    "alexnet": ("AlexNet ImageNet-synthetic", 61.0, "Krizhevsky et al. 2012: 60 million parameters (tf_cnn_benchmarks' variant; not counted here)", True),
    "inception3": ("Inception V3 ImageNet-synthetic", 23.9, "keras.io/api/applications table: InceptionV3 23.9M", False),
    "inception4": ("Inception V4 ImageNet-synthetic", 42.7, "Szegedy et al. 2016 Inception-v4 (timm inception_v4: 42.7M)", True),
    "resnet152": ("ResNet-152 (v1) ImageNet-synthetic", 60.4, "keras.io/api/applications table: ResNet152 60.4M", False),
    "resnet50": ("ResNet-50 (v1) ImageNet-synthetic", 25.6, "keras.io/api/applications table: ResNet50 25.6M", False),
    "vgg16": ("VGG16 ImageNet-synthetic", 138.4, "keras.io/api/applications table: VGG16 138.4M", False),
}
SHARED_TWINS = {("7502-A100-PCIE-40GB", "fp32", "vgg16"): "V25", ("7502-A100-PCIE-40GB", "fp16", "resnet50"): "X11"}


def git_ls(path):
    return subprocess.run(["git", "-C", LREPO, "ls-tree", "--name-only", LCOMMIT, path + "/"], capture_output=True,
                          text=True, check=True).stdout.split()


def total_ips(path):
    text = subprocess.run(["git", "-C", LREPO, "show", f"{LCOMMIT}:{path}"], capture_output=True, text=True,
                          check=True).stdout
    if "8gpus" in path:  # peer-to-peer between every pair: 56 Y in TF's edge matrix
        i = text.index("edge matrix")
        grid = text[i:].splitlines()[2:10]
        assert sum(line.split("]")[-1].count(" Y") for line in grid) == 56, path
    return float([l for l in text.splitlines() if l.startswith("total images/sec")][-1].split()[2])


n0 = len(out)
for d, (device, system, link, fw) in LSYS.items():
    for prec in ("fp32", "fp16"):
        one = {p.rsplit("/", 1)[1].rsplit("-", 1)[0]: p for p in git_ls(f"logs/{d}.logs/syn-replicated-{prec}-1gpus")}
        eight = {p.rsplit("/", 1)[1].rsplit("-", 1)[0]: p for p in git_ls(f"logs/{d}.logs/syn-replicated-{prec}-8gpus")}
        for m in sorted(one):
            if (d, prec, m) in SHARED_TWINS:
                continue
            b1, b8 = int(one[m].rsplit("-", 1)[1]), int(eight[m].rsplit("-", 1)[1])
            assert b1 == b8, (d, m)
            t1, t8 = total_ips(one[m] + "/throughput/1"), total_ips(eight[m] + "/throughput/1")
            name, params, psrc, pinf = LMODELS[m]
            row = {"id": f"H{len(out) + 1:02d}", "priority": "holdout", "model": name, "params_M": params,
                   "params_source": psrc, "params_inferred": pinf, "framework": fw,
                   "precision": "FP32" if prec == "fp32" else "FP16 (--use_fp16)", "optimizer": "SGD",
                   "per_gpu_batch": b1, "grad_accum": None, "device": device, "system": system, "gpus_per_host": 8,
                   "intra_host_link": link, "inter_host_gbps_per_host": None, "inter_host_network": "n/a (single host)",
                   "inter_host_inferred": False, "inter_host_source": None, "hosts": 1, "n_gpus": 8,
                   "throughput_unit": "images/s", "throughput_1gpu": t1, "throughput_ngpu": t8,
                   "efficiency": round(t8 / (8 * t1), 4), "step_time_1gpu_s_computed": round(b1 / t1, 4),
                   "per_gpu_batch_inferred": False,
                   "source": {"repo": "lambdal/lambda-tensorflow-benchmark (snapshot LambdaColdStorage/lambda-tensorflow-benchmark)",
                              "path": f"logs/{d}.logs/syn-replicated-{prec}-{{1,8}}gpus/{m}-{b1}/throughput/1 ('total images/sec')",
                              "commit": LCOMMIT, "section": "raw logs behind tf-train-throughput-*.csv",
                              "url": "https://github.com/lambdal/lambda-tensorflow-benchmark"},
                   "notes": "tf_cnn_benchmarks --variable_update=replicated --all_reduce_spec=nccl, synthetic data, one process "
                            "driving 8 GPUs; TF's 'Device interconnect' edge matrix is all Y (peer-to-peer) in the 8-GPU log."}
            out.append(row)
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print(n0, "DeepLearningExamples rows,", len(out) - n0, "Lambda rows:", len(out), "in all")
