/* A Vulkan layer that lists VK_EXT_headless_surface where the driver has none.

   Why: headless Chromium (the Ozone "headless" platform) starts ANGLE's Vulkan display only
   where the instance offers VK_EXT_headless_surface, and NVIDIA's server driver does not
   (vkCreateInstance: -7, VK_ERROR_EXTENSION_NOT_PRESENT). Without ANGLE on the GPU, the GL
   side falls to SwiftShader and Chromium then hands WebGPU the SwiftShader adapter only.
   With --disable-vulkan-surface and --enable-features=Vulkan, Chromium draws no window through
   Vulkan, so the extension is only asked for, never used: this layer says it is there, takes
   it out of the list the driver sees, and fails vkCreateHeadlessSurfaceEXT should anything
   ever call it. Device calls pass straight through.

   Built at first use by gpuoverhead/browser/surface.py into a private cache folder and
   enabled, as an implicit layer, for the browsers the tool starts with ANGLE on Vulkan
   (docs/browser-gpu.md). It needs no Vulkan headers: the few types of the loader's layer
   interface it uses are declared below as vulkan_core.h and vk_layer.h declare them (a
   stable ABI: the loader reads these structures from every layer). */

#include <stdint.h>
#include <string.h>

typedef int32_t VkResult;
typedef int32_t VkStructureType;
typedef struct VkInstance_T *VkInstance;
typedef struct VkPhysicalDevice_T *VkPhysicalDevice;
typedef struct VkDevice_T *VkDevice;
typedef struct VkSurfaceKHR_T *VkSurfaceKHR;
typedef struct VkAllocationCallbacks VkAllocationCallbacks;
typedef struct VkApplicationInfo VkApplicationInfo;
typedef struct VkHeadlessSurfaceCreateInfoEXT VkHeadlessSurfaceCreateInfoEXT;
typedef void (*PFN_vkVoidFunction)(void);
typedef PFN_vkVoidFunction (*PFN_vkGetInstanceProcAddr)(VkInstance, const char *);
typedef PFN_vkVoidFunction (*PFN_vkGetDeviceProcAddr)(VkDevice, const char *);

#define VKAPI_ATTR
#define VKAPI_CALL
#define VK_SUCCESS 0
#define VK_INCOMPLETE 5
#define VK_ERROR_INITIALIZATION_FAILED (-3)
#define VK_ERROR_LAYER_NOT_PRESENT (-6)
#define VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO 47
#define VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO 48
#define VK_MAX_EXTENSION_NAME_SIZE 256
#define VK_EXT_HEADLESS_SURFACE_EXTENSION_NAME "VK_EXT_headless_surface"

typedef struct {
    VkStructureType sType;
    const void *pNext;
    uint32_t flags;
    const VkApplicationInfo *pApplicationInfo;
    uint32_t enabledLayerCount;
    const char *const *ppEnabledLayerNames;
    uint32_t enabledExtensionCount;
    const char *const *ppEnabledExtensionNames;
} VkInstanceCreateInfo;

/* Its head only: the layer reads pNext and hands the whole structure on by its pointer. */
typedef struct {
    VkStructureType sType;
    const void *pNext;
} VkDeviceCreateInfo;

typedef struct {
    char extensionName[VK_MAX_EXTENSION_NAME_SIZE];
    uint32_t specVersion;
} VkExtensionProperties;

typedef VkResult (*PFN_vkCreateInstance)(const VkInstanceCreateInfo *,
                                         const VkAllocationCallbacks *, VkInstance *);
typedef void (*PFN_vkDestroyInstance)(VkInstance, const VkAllocationCallbacks *);
typedef VkResult (*PFN_vkCreateDevice)(VkPhysicalDevice, const VkDeviceCreateInfo *,
                                       const VkAllocationCallbacks *, VkDevice *);

/* vk_layer.h: how the loader hands each layer the next one in the chain. */
typedef enum { VK_LAYER_LINK_INFO = 0 } VkLayerFunction;

typedef struct VkLayerInstanceLink_ {
    struct VkLayerInstanceLink_ *pNext;
    PFN_vkGetInstanceProcAddr pfnNextGetInstanceProcAddr;
    PFN_vkVoidFunction pfnNextGetPhysicalDeviceProcAddr;
} VkLayerInstanceLink;

typedef struct {
    VkStructureType sType;  /* VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO */
    const void *pNext;
    VkLayerFunction function;
    union { VkLayerInstanceLink *pLayerInfo; void *other; } u;
} VkLayerInstanceCreateInfo;

typedef struct VkLayerDeviceLink_ {
    struct VkLayerDeviceLink_ *pNext;
    PFN_vkGetInstanceProcAddr pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr pfnNextGetDeviceProcAddr;
} VkLayerDeviceLink;

typedef struct {
    VkStructureType sType;  /* VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO */
    const void *pNext;
    VkLayerFunction function;
    union { VkLayerDeviceLink *pLayerInfo; void *other; } u;
} VkLayerDeviceCreateInfo;

#define EXPORT __attribute__((visibility("default")))
#define LAYER_NAME "VK_LAYER_GPUOVERHEAD_headless_surface"
#define MAX_TRACKED 64
#define MAX_EXTENSIONS 256

/* The next layer's entry points, per instance and per device (Chromium makes a few). */
static struct { void *key; PFN_vkGetInstanceProcAddr gipa; } instances[MAX_TRACKED];
static struct { void *key; PFN_vkGetDeviceProcAddr gdpa; } devices[MAX_TRACKED];

static void *dispatch_key(const void *handle) { return *(void **)handle; }

static PFN_vkGetInstanceProcAddr next_gipa(const void *instance) {
    for (int i = 0; i < MAX_TRACKED; i++)
        if (instances[i].key && instances[i].key == dispatch_key(instance)) return instances[i].gipa;
    return NULL;
}

static PFN_vkGetDeviceProcAddr next_gdpa(const void *device) {
    for (int i = 0; i < MAX_TRACKED; i++)
        if (devices[i].key && devices[i].key == dispatch_key(device)) return devices[i].gdpa;
    return NULL;
}

static const VkExtensionProperties ours[] = {{VK_EXT_HEADLESS_SURFACE_EXTENSION_NAME, 1}};

static VKAPI_ATTR VkResult VKAPI_CALL hs_CreateInstance(const VkInstanceCreateInfo *info,
        const VkAllocationCallbacks *allocator, VkInstance *instance) {
    VkLayerInstanceCreateInfo *link = (VkLayerInstanceCreateInfo *)info->pNext;
    while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
                     link->function == VK_LAYER_LINK_INFO))
        link = (VkLayerInstanceCreateInfo *)link->pNext;
    if (!link) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    link->u.pLayerInfo = link->u.pLayerInfo->pNext;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
    if (!create) return VK_ERROR_INITIALIZATION_FAILED;

    /* The driver is not asked for what only this layer provides. */
    const char *names[MAX_EXTENSIONS];
    uint32_t kept = 0;
    for (uint32_t i = 0; i < info->enabledExtensionCount && kept < MAX_EXTENSIONS; i++)
        if (strcmp(info->ppEnabledExtensionNames[i], VK_EXT_HEADLESS_SURFACE_EXTENSION_NAME))
            names[kept++] = info->ppEnabledExtensionNames[i];
    VkInstanceCreateInfo down = *info;
    down.enabledExtensionCount = kept;
    down.ppEnabledExtensionNames = kept ? names : NULL;
    VkResult result = create(&down, allocator, instance);
    if (result != VK_SUCCESS) return result;
    for (int i = 0; i < MAX_TRACKED; i++)
        if (!instances[i].key || instances[i].key == dispatch_key(*instance)) {
            instances[i].key = dispatch_key(*instance);
            instances[i].gipa = gipa;
            break;
        }
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL hs_DestroyInstance(VkInstance instance,
        const VkAllocationCallbacks *allocator) {
    PFN_vkGetInstanceProcAddr gipa = next_gipa(instance);
    PFN_vkDestroyInstance destroy = gipa ? (PFN_vkDestroyInstance)gipa(instance,
                                                                       "vkDestroyInstance") : NULL;
    if (destroy) destroy(instance, allocator);
}

static VKAPI_ATTR VkResult VKAPI_CALL hs_CreateDevice(VkPhysicalDevice physical,
        const VkDeviceCreateInfo *info, const VkAllocationCallbacks *allocator, VkDevice *device) {
    VkLayerDeviceCreateInfo *link = (VkLayerDeviceCreateInfo *)info->pNext;
    while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                     link->function == VK_LAYER_LINK_INFO))
        link = (VkLayerDeviceCreateInfo *)link->pNext;
    if (!link) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    link->u.pLayerInfo = link->u.pLayerInfo->pNext;
    PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(NULL, "vkCreateDevice");
    if (!create) return VK_ERROR_INITIALIZATION_FAILED;
    VkResult result = create(physical, info, allocator, device);
    if (result != VK_SUCCESS) return result;
    for (int i = 0; i < MAX_TRACKED; i++)
        if (!devices[i].key || devices[i].key == dispatch_key(*device)) {
            devices[i].key = dispatch_key(*device);
            devices[i].gdpa = gdpa;
            break;
        }
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL hs_CreateHeadlessSurfaceEXT(VkInstance instance,
        const VkHeadlessSurfaceCreateInfoEXT *info, const VkAllocationCallbacks *allocator,
        VkSurfaceKHR *surface) {
    (void)instance; (void)info; (void)allocator; (void)surface;
    return VK_ERROR_INITIALIZATION_FAILED;  /* listed, never provided: no window to draw */
}

EXPORT VKAPI_ATTR VkResult VKAPI_CALL hs_EnumerateInstanceExtensionProperties(
        const char *layer, uint32_t *count, VkExtensionProperties *properties) {
    if (!layer || strcmp(layer, LAYER_NAME)) return VK_ERROR_LAYER_NOT_PRESENT;
    if (!properties) { *count = 1; return VK_SUCCESS; }
    uint32_t n = *count < 1 ? *count : 1;
    memcpy(properties, ours, n * sizeof(*properties));
    *count = n;
    return n < 1 ? VK_INCOMPLETE : VK_SUCCESS;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL hs_GetDeviceProcAddr(VkDevice device,
        const char *name) {
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)hs_GetDeviceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = next_gdpa(device);
    return gdpa ? gdpa(device, name) : NULL;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL hs_GetInstanceProcAddr(VkInstance instance,
        const char *name) {
    if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_vkVoidFunction)hs_GetInstanceProcAddr;
    if (!strcmp(name, "vkCreateInstance")) return (PFN_vkVoidFunction)hs_CreateInstance;
    if (!strcmp(name, "vkDestroyInstance")) return (PFN_vkVoidFunction)hs_DestroyInstance;
    if (!strcmp(name, "vkCreateDevice")) return (PFN_vkVoidFunction)hs_CreateDevice;
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)hs_GetDeviceProcAddr;
    if (!strcmp(name, "vkEnumerateInstanceExtensionProperties"))
        return (PFN_vkVoidFunction)hs_EnumerateInstanceExtensionProperties;
    if (!strcmp(name, "vkCreateHeadlessSurfaceEXT"))
        return (PFN_vkVoidFunction)hs_CreateHeadlessSurfaceEXT;
    if (!instance) return NULL;
    PFN_vkGetInstanceProcAddr gipa = next_gipa(instance);
    return gipa ? gipa(instance, name) : NULL;
}
