//! Devices, with DLPack's `DLDeviceType` codes. Metadata works on every device; element
//! access needs memory the host can read.

/// A DLPack device type code and ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    /// DLPack `DLDeviceType`: 1 CPU, 2 CUDA, 3 CUDA host, 4 OpenCL, 7 Vulkan, 8 Metal,
    /// 9 VPI, 10 ROCm, 11 ROCm host, 12 ext_dev, 13 CUDA managed, 14 oneAPI, 15 WebGPU,
    /// 16 Hexagon, 17 MAIA, 18 Trn (AWS Trainium).
    pub device_type: i32,
    /// Device ordinal (>= 0).
    pub device_id: i32,
}

pub const CPU: i32 = 1;
pub const CUDA_HOST: i32 = 3;
pub const ROCM_HOST: i32 = 11;
pub const CUDA_MANAGED: i32 = 13;

impl Device {
    pub const CPU: Device = Device {
        device_type: CPU,
        device_id: 0,
    };

    /// A device type code DLPack 1.3 defines (1..=4, 7..=18).
    pub fn is_known(self) -> bool {
        matches!(self.device_type, 1..=4 | 7..=18) && self.device_id >= 0
    }

    /// Whether the host can read and write this device's memory directly.
    pub fn is_host_accessible(self) -> bool {
        matches!(self.device_type, CPU | CUDA_HOST | ROCM_HOST | CUDA_MANAGED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn codes() {
        assert!(Device::CPU.is_known() && Device::CPU.is_host_accessible());
        let cuda = Device {
            device_type: 2,
            device_id: 1,
        };
        assert!(cuda.is_known() && !cuda.is_host_accessible());
        let trn = Device {
            device_type: 18,
            device_id: 0,
        };
        assert!(trn.is_known() && !trn.is_host_accessible());
        assert!(!Device {
            device_type: 19,
            device_id: 0
        }
        .is_known());
        assert!(!Device {
            device_type: 5,
            device_id: 0
        }
        .is_known());
        assert!(!Device {
            device_type: 1,
            device_id: -1
        }
        .is_known());
    }
}
